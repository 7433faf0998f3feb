package manager

import (
	"strings"
	"testing"
	"time"
)

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	o := DefaultOptions()
	o.LeaderElection = true
	o.LeaseDuration, o.RenewDeadline = 5*time.Second, 10*time.Second
	o.Sidecar.SidecarImage = ""
	o.Overcommit.CPURatio = -1
	err := o.Validate()
	if err == nil {
		t.Fatal("invalid options accepted")
	}
	for _, want := range []string{"--leader-elect-lease-duration", "sidecar injector", "node overcommit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("the defaults are invalid: %v", err)
	}
	o.DisableWebhooks, o.LeaderElection = true, false
	if err := o.Validate(); err != nil {
		t.Errorf("webhook settings checked although webhooks are off: %v", err)
	}
}
