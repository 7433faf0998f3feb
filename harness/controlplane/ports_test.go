package controlplane

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAreFreeDistinctAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	low, high := portWindow()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		if high-low >= 1000 && (p < low || p >= high) {
			t.Errorf("port %d is outside [%d, %d): outgoing connections may take it", p, low, high)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}
