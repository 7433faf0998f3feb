// Command vm is the process of the image VirtualMachines run on the
// Docker daemon in the e2e suite (vmfixture.VMImage, built by
// vmfixture.EnsureVMImage; nothing is pulled). It stands for a machine at
// light, steady load: it holds 8 MiB of memory and keeps a core busy for
// 3 ms of every 100 ms, so that the container's CPU and memory use are not
// zero and move from one reading to the next. It runs until SIGTERM or
// SIGINT and then exits with status 0.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

const (
	heldMemory = 8 << 20
	period     = 100 * time.Millisecond
	busy       = 3 * time.Millisecond
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Every page is written, so that the memory is resident, not only
	// reserved.
	mem := make([]byte, heldMemory)
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 1
	}
	fmt.Printf("vm: holding %d MiB, busy %s of every %s\n", heldMemory>>20, busy, period)

	tick := time.NewTicker(period)
	defer tick.Stop()
	var spins uint64
	for {
		for end := time.Now().Add(busy); time.Now().Before(end); {
			spins++
		}
		select {
		case <-ctx.Done():
			runtime.KeepAlive(mem)
			fmt.Printf("vm: %s, stopping (%d spins)\n", context.Cause(ctx), spins)
			return
		case <-tick.C:
		}
	}
}
