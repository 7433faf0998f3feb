package leaks

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

func TestParseNetTCP(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the samples are from a little-endian machine")
	}
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 20 4 30 10 -1
   3: 0F02000A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 18 1 0000000000000000 100 0 0 10 0
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0948 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2404934 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0
`
	got, err := parseNetTCP(strings.NewReader(tcp))
	if err != nil {
		t.Fatal(err)
	}
	got6, err := parseNetTCP(strings.NewReader(tcp6))
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, ln := range append(got, got6...) {
		s = append(s, fmt.Sprintf("%s inode %d", ln.Addr(), ln.Inode))
	}
	// The established connection (st 01) is no listener.
	want := []string{"127.0.0.1:8080 inode 4242", "0.0.0.0:22 inode 17", "10.0.2.15:80 inode 18", "[::1]:2376 inode 2404934", "[::]:8081 inode 77"}
	if strings.Join(s, ", ") != strings.Join(want, ", ") {
		t.Errorf("parsed\n%s\nwant\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	if _, err := parseNetTCP(strings.NewReader("header\n 0: 7F:1F90 00000000:0000 0A 0 0 0 0 0 1 1\n")); err == nil {
		t.Error("a 1-byte address parsed")
	}
}

func TestParseStat(t *testing.T) {
	// comm may hold spaces and parentheses.
	p, err := parseStat("4321 (we (ird) name) S 1 4300 4300 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != 4321 || p.State != "S" || p.PPID != 1 || p.PGID != 4300 || p.Start != 987654 || p.Zombie() {
		t.Errorf("parsed %+v", p)
	}
	if _, err := parseStat("4321 (short) S 1 2"); err == nil {
		t.Error("a short stat parsed")
	}
}

func TestMentions(t *testing.T) {
	p := Proc{Cmdline: []string{"etcd", "--data-dir=/dev/shm/kubeharness-etcd-123", "--cert-dir", "/tmp/kubeharness-controlplane-9/pki"}}
	for path, want := range map[string]bool{
		"/dev/shm/kubeharness-etcd-123":    true,
		"/dev/shm/kubeharness-etcd-12":     false, // another directory's prefix
		"/tmp/kubeharness-controlplane-9":  true,  // a file below it
		"/tmp/kubeharness-controlplane-99": false,
	} {
		if got := p.Mentions(path); got != want {
			t.Errorf("Mentions(%s) = %v, want %v", path, got, want)
		}
	}
}
