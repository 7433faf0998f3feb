package devenv

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/internal/operatortest"
)

// The restart backoff doubles from restartBackoffMin up to
// restartBackoffMax, and starts over after a healthy run.
func TestNextBackoff(t *testing.T) {
	short := time.Second
	var got []time.Duration
	b := time.Duration(0)
	for range 9 {
		b = nextBackoff(b, short)
		got = append(got, b)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoffs after quick exits: %v, want %v", got, want)
		}
	}
	if b := nextBackoff(time.Minute, restartHealthyAfter); b != restartBackoffMin {
		t.Errorf("after a healthy run: %s, want %s", b, restartBackoffMin)
	}
}

// fakeRun is a supervised process that exits when told to.
type fakeRun struct {
	done    chan error
	stopped bool
}

func newFakeRun() *fakeRun { return &fakeRun{done: make(chan error, 1)} }

func (r *fakeRun) Done() <-chan error { return r.done }

func (r *fakeRun) Stop(time.Duration) error {
	if !r.stopped {
		r.stopped = true
		r.done <- errors.New("stopped")
	}
	return nil
}

// The supervisor's bookkeeping: an exit schedules a restart with backoff
// and counts it; a restart asked for (env restart) stops the running
// process, starts a new one at once and starts the backoff over.
func TestSupervisedRestarts(t *testing.T) {
	var runs []*fakeRun
	c := &supervised{name: "manager", what: "the manager", log: "manager.log", start: func() (operatortest.Running, error) {
		r := newFakeRun()
		runs = append(runs, r)
		return r, nil
	}}
	first, _ := c.start()
	c.watch(first)

	runs[0].done <- errors.New("killed")
	if err := <-c.done; err == nil {
		t.Fatal("no exit from done")
	}
	c.exited(errors.New("killed"))
	if c.retry == nil || c.backoff != restartBackoffMin || c.done != nil {
		t.Fatalf("after an exit: retry %v, backoff %s, done %v; want a restart due in %s", c.retry, c.backoff, c.done, restartBackoffMin)
	}
	<-c.retry
	if err := c.restart(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if c.restarts != 1 || len(runs) != 2 || c.retry != nil || c.done == nil {
		t.Fatalf("after the restart: %d restarts, %d runs, retry %v", c.restarts, len(runs), c.retry)
	}
	// A quick second exit waits twice as long.
	runs[1].done <- errors.New("killed")
	c.exited(<-c.done)
	if c.backoff != 2*restartBackoffMin {
		t.Errorf("backoff after a second quick exit: %s, want %s", c.backoff, 2*restartBackoffMin)
	}
	// env restart while it waits: at once, backoff over, not counted.
	if err := c.restart(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if c.restarts != 1 || c.backoff != 0 || c.retry != nil || len(runs) != 3 {
		t.Errorf("after env restart: %d restarts, backoff %s, retry %v, %d runs", c.restarts, c.backoff, c.retry, len(runs))
	}
	// env restart while it runs stops it first.
	if err := c.restart(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if !runs[2].stopped || len(runs) != 4 {
		t.Errorf("env restart of a running process: stopped %v, %d runs", runs[2].stopped, len(runs))
	}

	// A restarted process that exits before it serves: restart says so.
	c.ready = func(ctx context.Context, _ <-chan error) error {
		runs[len(runs)-1].done <- errors.New("crashed at start")
		<-ctx.Done()
		return ctx.Err()
	}
	if err := c.restart(context.Background(), true); err == nil || !strings.Contains(err.Error(), "exited before it served") {
		t.Errorf("restart of a process that crashes at start: %v", err)
	}
	if err := <-c.done; err == nil {
		t.Error("the exit did not reach the supervisor's loop")
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// hugeRequest is the size of the oversized request the tests send.
const hugeRequest = 10 << 20

// The supervisor reads no more of a request than maxControlRequest (and
// one byte to tell it is longer), however long it is.
func TestReadControlRequestStopsAtTheBound(t *testing.T) {
	src := &countingReader{r: io.MultiReader(strings.NewReader(strings.Repeat("x", hugeRequest)), strings.NewReader("\n"))}
	line, err := readControlRequest(src)
	if err == nil || !strings.Contains(err.Error(), "request longer than") {
		t.Errorf("a %d-byte request: %d bytes, %v; want it refused as too long", hugeRequest, len(line), err)
	}
	if src.n > maxControlRequest+1 {
		t.Errorf("read %d bytes of a %d-byte request; want at most %d", src.n, hugeRequest, maxControlRequest+1)
	}
	for _, req := range []string{"restart manager\n", "restart " + strings.Repeat("m", maxControlRequest-len("restart \n")) + "\n"} {
		if line, err := readControlRequest(strings.NewReader(req + "more")); err != nil || line != strings.TrimSpace(req) {
			t.Errorf("readControlRequest(%.20q...): %.20q, %v", req, line, err)
		}
	}
}

// The control socket: a 10 MB request gets an error answer and its
// connection is closed before the supervisor has read it; a request after
// it is served.
func TestControlSocketBoundsARequest(t *testing.T) {
	paths := newStateDir(t)
	requests, stop, err := serveControl(paths)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	conn, err := net.Dial("unix", paths.control())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	written := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(conn, io.MultiReader(strings.NewReader(strings.Repeat("x", hugeRequest)), strings.NewReader("\n")))
		written <- n
	}()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	reply, err := bufio.NewReader(io.LimitReader(conn, 4096)).ReadString('\n')
	if !strings.HasPrefix(reply, "error: request longer than") {
		t.Errorf("answer to a %d-byte request: %.100q, %v; want an error saying it is too long", hugeRequest, reply, err)
	}
	// The supervisor closed the connection: the writer stops, having got
	// no further than the bound and the socket's buffers.
	n := <-written
	if n >= hugeRequest {
		t.Errorf("the supervisor took all %d bytes of the request; want it to stop at %d", n, maxControlRequest)
	}
	t.Logf("the client got %d bytes of %d in before the supervisor closed the connection", n, hugeRequest)

	served := make(chan string, 1)
	go func() {
		req := <-requests
		served <- req.name
		req.reply <- nil
	}()
	conn2, err := net.Dial("unix", paths.control())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	_ = conn2.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn2, "restart manager\n"); err != nil {
		t.Fatal(err)
	}
	if reply, err := bufio.NewReader(conn2).ReadString('\n'); reply != "ok\n" || err != nil {
		t.Errorf("restart manager after the long request: %q, %v; want ok", reply, err)
	}
	if name := <-served; name != "manager" {
		t.Errorf("the supervisor was asked to restart %q, want manager", name)
	}
}
