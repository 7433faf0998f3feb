package operatortest

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// A manager or VirtualMachine controller binary: started is told its pid,
// Done yields how it exited, and Stop ends it with SIGTERM.
func TestBinaryRun(t *testing.T) {
	out, log, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pid := 0
	r, err := StartBinary("manager", "sh", []string{"-c", `trap "echo terminated; exit 0" TERM; echo up; while :; do sleep 0.05; done`}, nil, log, func(p int) { pid = p })
	log.Close()
	if err != nil {
		t.Fatal(err)
	}
	if pid != r.p.Pid() || pid == 0 {
		t.Errorf("started was told pid %d; the process is %d", pid, r.p.Pid())
	}
	lines := bufio.NewReader(out)
	if line, err := lines.ReadString('\n'); line != "up\n" {
		t.Fatalf("the shell said %q, %v", line, err)
	}
	if err := r.Stop(ManagerStopTimeout); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := <-r.Done(); err != nil {
		t.Errorf("Done after a clean stop: %v", err)
	}
	if rest, _ := io.ReadAll(lines); !strings.Contains(string(rest), "terminated") {
		t.Errorf("the shell said %q after Stop; want its SIGTERM trap's word", rest)
	}

	failed, err := StartBinary("VirtualMachine controller", "sh", []string{"-c", "exit 2"}, nil, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-failed.Done(); err == nil || !strings.HasPrefix(err.Error(), "VirtualMachine controller (sh) exited: exit status 2") {
		t.Errorf("Done of a binary that fails: %v", err)
	}
	if err := failed.Stop(time.Second); err == nil {
		t.Error("Stop of a binary that failed says nothing of it")
	}
	if _, err := StartBinary("manager", "/nonexistent/manager", nil, nil, io.Discard, nil); err == nil || !strings.HasPrefix(err.Error(), "starting manager: ") {
		t.Errorf("starting a missing binary: %v", err)
	}
}
