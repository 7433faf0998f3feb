package controlplane

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestVerbose(t *testing.T) {
	for path, want := range map[string]string{
		"/readyz":                    "/readyz?verbose",
		"/readyz?exclude=etcd":       "/readyz?exclude=etcd&verbose",
		"/livez?exclude=a&exclude=b": "/livez?exclude=a&exclude=b&verbose",
	} {
		if got := verbose(path); got != want {
			t.Errorf("verbose(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestReadyWatch(t *testing.T) {
	w := &readyWatch{began: time.Now()}
	w.observe(http.StatusInternalServerError, []byte("[+]ping ok\n[-]informer-sync failed: not synced\n[-]poststarthook/crd-informer-synced failed: reason withheld\nreadyz check failed\n"))
	w.observe(http.StatusInternalServerError, []byte("[+]ping ok\n[-]poststarthook/start-service-ip-repair-controllers failed: reason withheld\n"))
	w.observe(http.StatusOK, []byte("ok"))
	if !w.answered {
		t.Fatal("no first answer recorded")
	}
	if want := []string{"poststarthook/start-service-ip-repair-controllers"}; !reflect.DeepEqual(w.lastFailing, want) {
		t.Errorf("last failing checks %q, want %q", w.lastFailing, want)
	}
}
