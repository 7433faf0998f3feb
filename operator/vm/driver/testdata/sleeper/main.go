// Command sleeper is the process of the image the docker driver's
// integration tests run. It holds 16 MiB of memory, writes an 8 MiB file
// (page cache, which memory use leaves out) and keeps about a fifth of a
// core busy, so that the container's stats are not zero, until it is sent
// SIGTERM or SIGINT.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	mem := make([]byte, 16<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	_ = os.WriteFile("/cache", make([]byte, 8<<20), 0o600)
	var sink uint64
	for ctx.Err() == nil {
		// Busy for 10ms, idle for 40ms.
		for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
			sink++
		}
		select {
		case <-ctx.Done():
		case <-time.After(40 * time.Millisecond):
		}
	}
	if sink == 0 || mem[0] != 1 {
		os.Exit(1)
	}
}
