package controlplane

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// StartTimes is where a tuned start spent its time. etcd and
// kube-apiserver start together, so Etcd overlaps the API server's times.
type StartTimes struct {
	// Template is finding (or making) the etcd template and copying it.
	Template time.Duration
	// PKI is making the CA, serving, admin and ServiceAccount keys.
	PKI time.Duration
	// Etcd is from exec to etcd's /health answering 200.
	Etcd time.Duration
	// APIServerServing is from kube-apiserver's exec to its first HTTP
	// answer; APIServerReady from there to /readyz answering 200.
	APIServerServing, APIServerReady time.Duration
	// LastChecks are the /readyz checks still failing on the last answer
	// before ready: what the API server was waiting for at the end.
	LastChecks []string
	// APIServer is the API server binary's name (APIServerBinary).
	APIServer string
	// Made names the templates this start made for the next ones because
	// none held what it needed: "base" (it bootstrapped from an empty
	// etcd, which APIServerReady includes) and "CRDs" (it installed
	// Options.CRDs). MadeIn is the time that took after the API server
	// was ready: installing the CRDs and copying etcd's data.
	Made   []string
	MadeIn time.Duration
}

func (t StartTimes) String() string {
	s := fmt.Sprintf("etcd template %s, pki %s, then together: etcd healthy in %s; %s serving in %s, ready %s after",
		ms(t.Template), ms(t.PKI), ms(t.Etcd), cmp.Or(t.APIServer, "kube-apiserver"), ms(t.APIServerServing), ms(t.APIServerReady))
	if len(t.LastChecks) > 0 {
		s += " (last waiting on " + strings.Join(t.LastChecks, ", ") + ")"
	}
	if len(t.Made) > 0 {
		s += fmt.Sprintf("; made the %s template in %s more", strings.Join(t.Made, " and "), ms(t.MadeIn))
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// verbose asks a health path (which may carry a query already) to list
// every check.
func verbose(path string) string {
	if strings.Contains(path, "?") {
		return path + "&verbose"
	}
	return path + "?verbose"
}

// readyWatch follows the answers of /readyz?verbose during a start.
type readyWatch struct {
	began       time.Time
	firstAnswer time.Duration
	answered    bool
	lastFailing []string
}

func (w *readyWatch) observe(status int, body []byte) {
	if !w.answered {
		w.answered, w.firstAnswer = true, time.Since(w.began)
	}
	if status == http.StatusOK {
		return
	}
	// Verbose answers list every check: "[+]etcd ok", "[-]informer-sync failed: ...".
	var failing []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "[-]"); ok {
			name, _, _ = strings.Cut(name, " ")
			failing = append(failing, name)
		}
	}
	if len(failing) > 0 {
		w.lastFailing = failing
	}
}
