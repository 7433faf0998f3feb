package rbacaudit

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// NoLogsError is a directory LogFiles was given that holds no *.log file.
type NoLogsError struct{ Dir string }

func (e *NoLogsError) Error() string { return "no *.log file in " + e.Dir }

// LogFiles expands paths into audit log files: a file is itself, a
// directory the *.log files in it, sorted (kube-apiserver's rotated logs
// end in .log too). A directory without one is a *NoLogsError.
func LogFiles(paths ...string) ([]string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		found, err := filepath.Glob(filepath.Join(p, "*.log"))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, &NoLogsError{Dir: p}
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

// ReadLog reads the requests of one API server's audit log. Audit IDs are
// unique per API server only, so each log is turned into requests on its
// own and the requests of several are appended. An empty log (of a
// control plane whose run had nothing to record) has none.
func ReadLog(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, err := ReadEvents(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(events) == 0 {
		return nil, nil
	}
	return Requests(events), nil
}
