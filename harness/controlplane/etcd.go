package controlplane

import (
	"context"
	"io"
	"time"
)

// etcdServer is a tuned etcd: its data on tmpfs (Options.Dir aside)
// without fsync, a single-member election in milliseconds instead of
// about a second, and listening on unix sockets in the control plane's
// directory only, no TCP port (etcdsocket.go).
type etcdServer struct {
	proc
	// path is the binary; dataDir etcd's data; dir its working
	// directory, where its sockets are.
	path, dataDir, dir string
	out                io.Writer
	// keepData is for the start that makes an etcd template: etcd then
	// gets the time to close its data cleanly, after the others are gone.
	keepData bool
}

func (*etcdServer) name() Component { return Etcd }

func (e *etcdServer) start() error {
	listen, err := etcdListenArgs(e.dir)
	if err != nil {
		return err
	}
	cmd := command(e.out, e.path, append(append([]string{"--data-dir=" + e.dataDir}, listen...), tunedEtcdFlags()...)...)
	cmd.Dir = e.dir
	return e.run(cmd)
}

// ready waits until etcd answers its health check on its socket.
func (e *etcdServer) ready(ctx context.Context) error {
	hc := etcdHTTPClient(e.dir)
	defer hc.CloseIdleConnections()
	return e.p.WaitHTTP(ctx, hc, etcdHealthURL, nil)
}

func (e *etcdServer) stopGrace() time.Duration {
	if e.keepData {
		// Every write the template's start waited for is committed.
		return 10 * time.Second
	}
	return 0
}

// tunedEtcdFlags were chosen by measurement (`kubeharness bench`).
func tunedEtcdFlags() []string {
	return []string{
		// Nothing survives a test run, so nothing needs to reach a disk (the
		// data directory is on tmpfs as well).
		"--unsafe-no-fsync=true",
		// A single member elects itself after one election timeout; at the
		// default 1s that is most of etcd's start.
		"--heartbeat-interval=10",
		"--election-timeout=50",
		"--log-level=error",
	}
}
