package leaks

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
)

// Listener is a listening TCP socket.
type Listener struct {
	IP   net.IP
	Port int
	// Inode is the socket's, as a process's file descriptors name it
	// (SocketInodes).
	Inode uint64
}

// Addr is the address the socket listens on, host:port.
func (l Listener) Addr() string { return net.JoinHostPort(l.IP.String(), strconv.Itoa(l.Port)) }

// tcpListen is the LISTEN state in /proc/net/tcp.
const tcpListen = "0A"

// parseNetTCP returns the listening sockets of a /proc/net/tcp or
// /proc/net/tcp6 table (proc(5)): "sl local_address rem_address st ...
// uid timeout inode ...", addresses as hex ADDR:PORT. ADDR is the address
// in 32-bit words, each printed as a number in the host's byte order.
func parseNetTCP(r io.Reader) ([]Listener, error) {
	var out []Listener
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		if f[3] != tcpListen {
			continue
		}
		hexAddr, hexPort, ok := strings.Cut(f[1], ":")
		raw, err := hex.DecodeString(hexAddr)
		if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
			return nil, fmt.Errorf("unexpected local address %q", f[1])
		}
		ip := make(net.IP, len(raw))
		for i := 0; i < len(raw); i += 4 {
			binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("unexpected local address %q", f[1])
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("unexpected inode %q", f[9])
		}
		out = append(out, Listener{IP: ip, Port: int(port), Inode: inode})
	}
	return out, sc.Err()
}
