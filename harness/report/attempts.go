package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// WriteAttempt writes one attempt's report of a suite run with Ginkgo's
// --repeat (or --until-it-fails) to <artifacts>/attempts/: Ginkgo
// overwrites its own --json-report with every attempt and keeps only the
// last, so a spec that passed in an earlier attempt and failed in the last
// would look like any other failure. Call it from a ReportAfterSuite
// (harness/suite.RecordAttempts does), which runs once per attempt, on
// the first process, with every process's specs.
//
// The files of one invocation of the ginkgo command share a prefix (the
// command's process id, the parent of the suite's process); files of an
// earlier invocation are removed when an attempt of a new one is written.
//
// artifacts, and each directory above it, must belong to the caller or
// root and be writable by no one else (sticky directories such as /tmp
// excepted), and the attempts directory may not be a symbolic link, or
// WriteAttempt refuses, saying why: another user could lead what it
// writes and removes elsewhere.
func WriteAttempt(artifacts string, r types.Report) error {
	return writeAttempt(filepath.Join(artifacts, AttemptsDir), strconv.Itoa(os.Getppid()), r)
}

func writeAttempt(dir, invocation string, r types.Report) error {
	root, err := openOutDir(dir, "the attempt's report", "give the suite an artifacts directory of your own that only you can write")
	if err != nil {
		return fmt.Errorf("recording the attempt's report: %w", err)
	}
	defer func() { _ = root.Close() }()
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("recording the attempt's report: %w", err)
	}
	entries, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil {
		return fmt.Errorf("recording the attempt's report: %w", err)
	}
	n := 1
	for _, e := range entries {
		inv, _, ok := attemptName(e.Name())
		switch {
		case !ok:
		case inv == invocation:
			n++
		default:
			if err := root.Remove(e.Name()); err != nil {
				return fmt.Errorf("removing the attempt report of an earlier run: %w", err)
			}
		}
	}
	data, err := json.Marshal([]types.Report{r})
	if err != nil {
		return fmt.Errorf("encoding the attempt's report: %w", err)
	}
	if err := writeFileIn(root, fmt.Sprintf("%s-%d.json", invocation, n), data); err != nil {
		return fmt.Errorf("recording the attempt's report in %s: %w", dir, err)
	}
	return nil
}

// attemptName parses an attempt file's name, <invocation>-<n>.json.
func attemptName(name string) (invocation string, n int, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(base, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(base[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return base[:i], n, true
}

// attempt is one recorded attempt's report.
type attempt struct {
	invocation string
	n          int
	report     types.Report
}

// readAttempts reads the attempt reports below dir; a missing directory
// is no attempts.
func readAttempts(dir string) ([]attempt, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the attempt reports: %w", err)
	}
	var out []attempt
	for _, e := range entries {
		inv, n, ok := attemptName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue // a symlink is no attempt WriteAttempt wrote
		}
		path := filepath.Join(dir, e.Name())
		reports, err := ReadReports(path)
		if err != nil {
			return nil, err
		}
		for _, r := range reports {
			out = append(out, attempt{invocation: inv, n: n, report: r})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].invocation != out[j].invocation {
			return out[i].invocation < out[j].invocation
		}
		return out[i].n < out[j].n
	})
	return out, nil
}

// attemptsOf returns the attempts of the run whose last attempt's report
// is final, oldest first, final last; just final when no recorded
// attempt is final's (the suite records none, or the run was not
// repeated).
func attemptsOf(final types.Report, recorded []attempt) []types.Report {
	invocation := ""
	for _, a := range recorded {
		if a.report.SuitePath == final.SuitePath && !final.StartTime.IsZero() && a.report.StartTime.Equal(final.StartTime) {
			invocation = a.invocation
		}
	}
	if invocation == "" {
		return []types.Report{final}
	}
	var out []types.Report
	for _, a := range recorded {
		if a.invocation != invocation || a.report.SuitePath != final.SuitePath {
			continue
		}
		if a.report.StartTime.Equal(final.StartTime) {
			continue // final holds it, with the nodes that ran after it was recorded
		}
		out = append(out, a.report)
	}
	return append(out, final)
}

// ReadReports reads a Ginkgo JSON report (ginkgo --json-report): the
// reports of the suites one ginkgo run ran. It must be a regular file of
// at most MaxReportSize bytes: a named pipe or a device is refused before
// anything is read from it.
func ReadReports(path string) ([]types.Report, error) {
	data, err := readInputFile(path, reportInput)
	if err != nil {
		return nil, err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s is not a Ginkgo JSON report (a list of suite reports, as --json-report writes it): %w", path, err)
	}
	return reports, nil
}
