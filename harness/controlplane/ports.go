package controlplane

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePorts returns n distinct loopback TCP ports that were free when it
// was called, for servers that are started later.
//
// The ports lie below the kernel's ephemeral range where there is room
// (on Linux, /proc/sys/net/ipv4/ip_local_port_range; 20000 up to it):
// a port from that range, which is what listening on port 0 hands out,
// can be taken between this call and the server's start by the local end
// of any outgoing connection on the machine, and on a busy machine was.
func FreePorts(n int) ([]int, error) {
	low, high := portWindow()
	if high-low < 1000 {
		return ephemeralPorts(n)
	}
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			return nil, fmt.Errorf("no free loopback port found in %d tries between %d and %d", tries, low, high)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(low+rand.IntN(high-low))))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portWindow is where FreePorts picks: from 20000 up to the start of the
// ephemeral range; an empty window where that range is unknown.
func portWindow() (low, high int) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, 0
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, 0
	}
	return 20000, start
}

// ephemeralPorts asks the kernel for n ports (listening on port 0).
func ephemeralPorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
