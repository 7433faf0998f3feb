package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/faultenv"
	"github.com/kubeharness/kubeharness/internal/operatortest"
)

// benchLeaderFailover kills the leader of three manager processes kills
// times (faultenv.RunLeaderFire), prints the failover times and the
// leadership intervals checked, and fails when two replicas ever led at
// once or a failover took 15 s or more.
func benchLeaderFailover(ctx context.Context, root string, version versions.Version, kills int) error {
	if kills == 0 {
		return nil
	}
	dir := filepath.Join(operatortest.ArtifactsDir(root), "bench-leader-election")
	fmt.Fprintf(os.Stderr, "leader election under fire: 3 manager processes, %d leaders killed with SIGKILL (logs in %s)\n", kills, dir)
	rep, err := faultenv.RunLeaderFire(ctx, faultenv.LeaderFireOptions{
		Root: root, Version: version, Dir: dir, Replicas: 3, Kills: kills, Progress: os.Stderr,
	})
	if err != nil {
		return fmt.Errorf("leader election under fire: %w", err)
	}
	fmt.Println(rep.String())
	if len(rep.Overlaps) > 0 {
		return fmt.Errorf("two replicas led at once:\n  %s", strings.Join(rep.Overlaps, "\n  "))
	}
	if worst := rep.Percentile(100); worst >= leaderFailoverGoal {
		return fmt.Errorf("the slowest failover took %s, over the %s goal", worst.Round(time.Millisecond), leaderFailoverGoal)
	}
	return nil
}

// leaderFailoverGoal is how long a replica may take to lead after the
// leader was killed.
const leaderFailoverGoal = 15 * time.Second
