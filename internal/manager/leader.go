package manager

import (
	"context"
	"os"
	"time"

	"github.com/go-logr/logr"
)

// LeaderLogMessage and LeaderStopMessage are what a replica logs when it
// starts and stops acting as leader (running the controllers). With
// several replicas, their logs tell who led when; the harness reads them
// to prove no two replicas ever led at once.
const (
	LeaderLogMessage  = "acting as leader"
	LeaderStopMessage = "stopped acting as leader"
)

// Each line carries "at", the time to the nanosecond (the log's own
// timestamps may be to the second).
//
// leaderLog is a runnable that needs leader election, as the controllers
// do: the manager starts it with them once this replica holds the Lease,
// and stops it with them.
type leaderLog struct{ log logr.Logger }

func (leaderLog) NeedLeaderElection() bool { return true }

func (l leaderLog) Start(ctx context.Context) error {
	host, _ := os.Hostname()
	l.log.Info(LeaderLogMessage, "pid", os.Getpid(), "host", host, "at", time.Now().UTC().Format(time.RFC3339Nano))
	<-ctx.Done()
	l.log.Info(LeaderStopMessage, "pid", os.Getpid(), "host", host, "at", time.Now().UTC().Format(time.RFC3339Nano))
	return nil
}
