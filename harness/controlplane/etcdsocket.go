package controlplane

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
)

// A tuned etcd serves no TCP port. Over TCP on loopback without
// authentication it served every local user: anyone could read every
// Secret from it and write a ClusterRoleBinding that the API server then
// honoured. It listens on unix sockets instead, in the control plane's
// directory (mode 0700, this user's, made by run): the kernel lets only
// this user (and root) connect, the API server included, which runs as
// this user. Client-certificate TLS from the plane's CA would protect a
// TCP port as well; it costs more at start (docs/benchmarks.md) and leaves
// a port that other users can still connect to.
//
// etcd serves its peer listener (raft, member and lease endpoints) on a
// unix socket too: a single member never dials a peer, but etcd always
// listens for them. No metrics listener is asked for.
//
// The sockets are named relative to the directory, which is etcd's and
// kube-apiserver's working directory: a unix socket's path is limited to
// about a hundred bytes, and the directory's own path, below Options.Dir,
// may be longer. etcd takes a unix URL's host as the path
// (unix://etcd.sock), and so does the API server's etcd client; this
// process reaches the socket through the directory's descriptor
// (dialInDir).

const (
	// etcdClientSocket and etcdPeerSocket are the sockets' names in the
	// control plane's directory.
	etcdClientSocket = "etcd.sock"
	etcdPeerSocket   = "etcd-peer.sock"
	// etcdClientURL is the client socket for etcd and the API server,
	// both running in that directory.
	etcdClientURL = "unix://" + etcdClientSocket
	// etcdListen says how etcd is reached, for the template's key: a
	// template is made again when it changes.
	etcdListen = "listen: unix sockets in a 0700 directory"
	// maxSocketPath is the longest path a unix socket may have: sun_path
	// holds 108 bytes on Linux and 104 on macOS and the BSDs, with the
	// terminating NUL.
	maxSocketPath = 103
	// etcdHealthURL is etcd's health endpoint; the host is ignored, as
	// etcdHTTPClient dials the socket.
	etcdHealthURL = "http://etcd/health"
)

// etcdListenArgs are the flags that have etcd, running in dir, listen on
// sockets there only. Where dir is too long for this process to reach a
// socket in it (outside Linux), it says so.
func etcdListenArgs(dir string) ([]string, error) {
	if socket := filepath.Join(dir, etcdClientSocket); len(socket) > maxSocketPath && runtime.GOOS != "linux" {
		return nil, fmt.Errorf("etcd's socket %s is %d bytes long, more than a unix socket's %d: set Options.Dir (or TMPDIR) to a shorter directory", socket, len(socket), maxSocketPath)
	}
	return []string{
		"--listen-client-urls=" + etcdClientURL, "--advertise-client-urls=" + etcdClientURL,
		"--listen-peer-urls=unix://" + etcdPeerSocket,
	}, nil
}

// etcdHTTPClient talks HTTP to etcd's client socket in dir.
func etcdHTTPClient(dir string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialInDir(ctx, dir, etcdClientSocket)
		},
	}}
}

// dialInDir connects to the unix socket name in dir; on Linux, when the
// path is too long for a socket's, through dir's descriptor
// (/proc/self/fd/N/name).
func dialInDir(ctx context.Context, dir, name string) (net.Conn, error) {
	var d net.Dialer
	path := filepath.Join(dir, name)
	if len(path) <= maxSocketPath || runtime.GOOS != "linux" {
		return d.DialContext(ctx, "unix", path)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return d.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d/%s", f.Fd(), name))
}
