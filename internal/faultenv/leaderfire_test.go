package faultenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCheckOverlapsFindsTwoLeadersAtOnce(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_800_000_000+int64(s), 0) }
	handover := []LeaderInterval{
		{Process: "a", Start: at(0), End: at(10)},
		{Process: "b", Start: at(18), End: at(30)},
		{Process: "c", Start: at(39)},
	}
	if got := CheckOverlaps(handover); len(got) != 0 {
		t.Errorf("clean handovers reported as overlaps: %v", got)
	}
	for name, ivs := range map[string][]LeaderInterval{
		"a new leader before the old one died": {{Process: "a", Start: at(0), End: at(10)}, {Process: "b", Start: at(9), End: at(20)}},
		"a leader that never ended":            {{Process: "a", Start: at(0)}, {Process: "b", Start: at(50), End: at(60)}},
		"one inside another":                   {{Process: "a", Start: at(0), End: at(100)}, {Process: "b", Start: at(40), End: at(50)}},
	} {
		if got := CheckOverlaps(ivs); len(got) != 1 {
			t.Errorf("%s: got %v, want one overlap", name, got)
		}
	}
}

func TestLeaderIntervalsReadsWhatTheReplicaLogged(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "r.log")
	lines := `{"level":"info","ts":"2026-11-22T18:00:00Z","logger":"leader-election","msg":"acting as leader","pid":1,"at":"2026-11-22T18:00:00.123456789Z"}
not json at all
{"level":"info","ts":"2026-11-22T18:00:05Z","logger":"leader-election","msg":"stopped acting as leader","pid":1,"at":"2026-11-22T18:00:05.5Z"}
{"level":"info","ts":"2026-11-22T18:00:09Z","logger":"leader-election","msg":"acting as leader","pid":1,"at":"2026-11-22T18:00:09Z"}
`
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	killed := time.Date(2026, 11, 22, 18, 0, 12, 0, time.UTC)
	ivs, err := leaderIntervals(&replica{name: "r", log: log, killed: killed})
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != 2 {
		t.Fatalf("got %d intervals, want 2: %+v", len(ivs), ivs)
	}
	if want := time.Date(2026, 11, 22, 18, 0, 0, 123456789, time.UTC); !ivs[0].Start.Equal(want) || ivs[0].EndedBy != "stopped" {
		t.Errorf("first interval %+v, want start %s ended by stopping", ivs[0], want)
	}
	if !ivs[1].End.Equal(killed) || ivs[1].EndedBy != "SIGKILL" {
		t.Errorf("second interval %+v, want it ended by the kill at %s", ivs[1], killed)
	}
}
