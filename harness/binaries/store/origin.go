package store

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// How a binary came into a store directory, as its Origin records it.
const (
	// OriginDownloaded is a binary taken from the official envtest archive.
	OriginDownloaded = "downloaded"
	// OriginBuilt is a binary built from the Go module proxy.
	OriginBuilt = "built"
)

// Origin is how a binary in a store directory came to be. Whatever installs
// a binary records one beside it (.<name>.origin, Record), and Link takes
// it along with the binary; the record names the binary by size and
// sha512, so a record about a file since replaced is not taken for the
// file there now.
type Origin struct {
	// How is OriginDownloaded or OriginBuilt.
	How string `json:"how"`
	// Kubernetes is the version of the store directory the binary was
	// installed for (etcd has a version of its own).
	Kubernetes versions.Version `json:"kubernetes"`
	// Source is the archive's URL for a download, module@version for a
	// build.
	Source string `json:"source"`
	// Index is the envtest index a downloaded binary's archive was found
	// in, which ArchiveSHA512 comes from.
	Index string `json:"index,omitempty"`
	// ArchiveSHA512 is the sha512 of a downloaded binary's archive, as the
	// index gave it and the download matched.
	ArchiveSHA512 string `json:"archiveSHA512,omitempty"`
	// Size and SHA512 are the binary's.
	Size   int64  `json:"size"`
	SHA512 string `json:"sha512"`
}

// originPath is where the Origin of the binary at bin is kept.
func originPath(bin string) string {
	return filepath.Join(filepath.Dir(bin), "."+filepath.Base(bin)+".origin")
}

// ReadOrigin returns the recorded Origin of the binary name in the store
// directory dir; ok is false when there is no record, or when it is about
// a file of another size than the one there (a cheap check: the up-to-date
// check of a downloaded etcd compares the sha512 too).
func ReadOrigin(dir, name string) (o Origin, ok bool) {
	bin := filepath.Join(dir, name)
	data, err := os.ReadFile(originPath(bin))
	if err != nil || json.Unmarshal(data, &o) != nil {
		return Origin{}, false
	}
	fi, err := os.Stat(bin)
	if err != nil || fi.Size() != o.Size {
		return Origin{}, false
	}
	return o, true
}

// Describes reports whether o is about the very file at bin, by its
// sha512.
func (o Origin) Describes(bin string) bool {
	size, sum, err := FileSHA512(bin)
	return err == nil && size == o.Size && sum == o.SHA512
}

// WriteOrigin records o for the binary at bin as it is, through a
// temporary file renamed into place.
func WriteOrigin(bin string, o Origin) error {
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	path := originPath(bin)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("recording how %s came to be: %w", bin, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("recording how %s came to be: %w", bin, err)
	}
	return nil
}

// Record records o for the binary at bin with its size and sha512 as they
// are now.
func Record(bin string, o Origin) error {
	size, sum, err := FileSHA512(bin)
	if err != nil {
		return err
	}
	o.Size, o.SHA512 = size, sum
	return WriteOrigin(bin, o)
}

// copyOrigin gives dst, a link or copy of src, src's record, or none when
// src has none.
func copyOrigin(src, dst string) error {
	data, err := os.ReadFile(originPath(src))
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Remove(originPath(dst)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	var o Origin
	if err := json.Unmarshal(data, &o); err != nil {
		return fmt.Errorf("%s: %w", originPath(src), err)
	}
	return WriteOrigin(dst, o)
}

// FileSHA512 returns the size and hex sha512 of the file at path.
func FileSHA512(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha512.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// DescribeOrigins says how the binaries the store directory dir holds came
// to be, by their Origin records: "downloaded: etcd, kube-apiserver,
// kubectl; built: kube-controller-manager". The binaries are the names
// given that dir holds, and every file there with a record; one without a
// record that describes it is "origin not recorded". A directory holding
// none of them is "".
func DescribeOrigins(dir string, names ...string) string {
	names = slices.Clone(names)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e.Name(), "."); ok {
			if name, ok = strings.CutSuffix(name, ".origin"); ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	byHow := map[string][]string{}
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		o, _ := ReadOrigin(dir, name)
		byHow[o.How] = append(byHow[o.How], name)
	}
	var parts []string
	for _, how := range []string{OriginDownloaded, OriginBuilt, ""} {
		if len(byHow[how]) == 0 {
			continue
		}
		label := how
		if how == "" {
			label = "origin not recorded"
		}
		parts = append(parts, label+": "+strings.Join(byHow[how], ", "))
	}
	return strings.Join(parts, "; ")
}
