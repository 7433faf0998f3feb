package kubeharness_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureNamesExist keeps docs/architecture.md true to the code:
// every name it gives in backquotes must still be there. A Go name (a
// package, type, function, method, field, constant or variable, alone or
// dotted as `binaries.Store.Provide`) must be declared in a Go file of this
// repository, a path (`harness/controlplane`, `component.go`) must be a
// file or directory of it, and an environment variable must be read by
// some Go file. Commands, flags and values written in backquotes (anything
// with a blank, `=`, or a leading `-`) are not names and are left alone.
func TestArchitectureNamesExist(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	idx := indexRepository(t)

	var missing []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(string(doc), -1) {
		name := m[1]
		if what, ok := idx.lacks(name); ok {
			missing = append(missing, "`"+name+"`: "+what)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/architecture.md names what the repository no longer has; say what is there now:\n  %s",
			strings.Join(missing, "\n  "))
	}
}

// TestArchitectureNamesCheckCatchesAStaleName proves the check above can
// fail: names that are not in the repository are reported, each kind of
// them, and names that are are not.
func TestArchitectureNamesCheckCatchesAStaleName(t *testing.T) {
	idx := indexRepository(t)
	for _, stale := range []string{
		"binaries.Builder",           // removed: a Source now provides binaries
		"controlplane.Options.Stock", // removed: the bench starts stock envtest itself
		"harness/controlplane/components.go",
		"KUBEHARNESS_NO_SUCH_SETTING",
		"NoSuchFunction",
	} {
		if _, ok := idx.lacks(stale); !ok {
			t.Errorf("%q was taken for a name the repository has", stale)
		}
	}
	for _, present := range []string{
		"binaries.Source", "Store.Provide", "controlplane.Options.BinaryDir", "cluster.Provider",
		"harness/controlplane", "component.go", "KUBEBUILDER_ASSETS", "TEST_ASSET_<NAME>",
		"report.*Entry", "make verify", "*operatortest.Operator", "requires[operatortest.X]",
	} {
		if what, ok := idx.lacks(present); ok {
			t.Errorf("%q was reported missing (%s)", present, what)
		}
	}
}

// repoIndex is what the repository declares and holds.
type repoIndex struct {
	// top are the names each package (by its name) declares at its top
	// level; members the fields and methods of each type (by its name),
	// whatever its package.
	top, members map[string]map[string]bool
	// idents are every name declared or selected (x.Name) in any Go file;
	// paths every file and directory, relative to this directory.
	idents, paths map[string]bool
	// imported are the names under which Go files import packages, ours
	// and others'.
	imported map[string]bool
	// source is the text of every non-test Go file and of versions.yaml,
	// for environment variables, command names and lockfile keys.
	source strings.Builder
}

var (
	envName  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9<>]+)+$`)
	goName   = regexp.MustCompile(`^\*?[A-Za-z_][A-Za-z0-9_]*(\.\*?[A-Za-z_][A-Za-z0-9_]*)*(\[[A-Za-z0-9_.]+\])?$`)
	fileName = regexp.MustCompile(`\.(go|md|yaml|yml|tmpl|json|sh)$`)
)

// lacks says whether name, as docs/architecture.md writes it, names
// something the repository does not have, and what.
func (idx *repoIndex) lacks(name string) (string, bool) {
	switch {
	case strings.ContainsAny(name, " =") || strings.HasPrefix(name, "-"):
		return "", false // a command, flag or setting, not a name
	case envName.MatchString(name):
		// TEST_ASSET_<NAME> stands for TEST_ASSET_ETCD and the like.
		prefix, _, _ := strings.Cut(name, "<")
		if !strings.Contains(idx.source.String(), `"`+prefix) {
			return "no Go file reads this environment variable", true
		}
		return "", false
	case strings.Contains(name, "/") || fileName.MatchString(name):
		if strings.HasPrefix(name, "bin/") || strings.HasPrefix(name, "artifacts/") || filepath.IsAbs(name) {
			return "", false // made by a build or a run, or on the user's machine: not the repository's
		}
		if !idx.hasPath(strings.Trim(name, "/")) {
			return "no such file or directory", true
		}
		return "", false
	case goName.MatchString(name):
		return idx.lacksGoName(name)
	}
	return "", false
}

// hasPath says whether rel names a file or directory of the repository,
// from its root or from a directory in it (docs write
// `binaries/component` for harness/binaries/component).
func (idx *repoIndex) hasPath(rel string) bool {
	for p := range idx.paths {
		if p == rel || strings.HasSuffix(p, "/"+rel) {
			return true
		}
	}
	return false
}

// lacksGoName checks a Go name: `pkg.Name`, `Type.Member`,
// `pkg.Type.Member` or a name alone; `report.*Entry` stands for a family
// and `requires[operatortest.X]` has a placeholder, which are not checked.
func (idx *repoIndex) lacksGoName(name string) (string, bool) {
	base, _, _ := strings.Cut(name, "[")
	parts := strings.Split(strings.TrimPrefix(base, "*"), ".")
	for i, p := range parts {
		if strings.HasPrefix(p, "*") {
			parts = parts[:i]
			break
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	if len(parts) == 1 {
		word := parts[0]
		if idx.idents[word] || idx.hasPath(word) || strings.Contains(idx.source.String(), `"`+word) ||
			strings.Contains(idx.source.String(), "\n"+word+":") || strings.Contains(idx.source.String(), " "+word+":") {
			return "", false
		}
		return "no Go declaration, file or lockfile key " + word, true
	}
	rest := parts
	if _, ours := idx.top[parts[0]]; !ours && idx.imported[parts[0]] {
		return "", false // another module's package, such as rest.Config
	}
	if decl, isPkg := idx.top[parts[0]]; isPkg {
		if !decl[parts[1]] {
			return "package " + parts[0] + " declares no " + parts[1], true
		}
		rest = parts[1:]
	}
	for i := 0; i+1 < len(rest); i++ {
		if !idx.members[rest[i]][rest[i+1]] {
			return rest[i] + " has no field or method " + rest[i+1], true
		}
	}
	return "", false
}

// indexRepository reads every Go file and file name of the repository
// below this directory, the harness module's included.
func indexRepository(t *testing.T) *repoIndex {
	t.Helper()
	idx := &repoIndex{top: map[string]map[string]bool{}, members: map[string]map[string]bool{},
		idents: map[string]bool{}, paths: map[string]bool{}, imported: map[string]bool{}}
	member := func(typ, name string) {
		if idx.members[typ] == nil {
			idx.members[typ] = map[string]bool{}
		}
		idx.members[typ][name] = true
		idx.idents[name] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "artifacts" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		idx.paths[filepath.ToSlash(path)] = true
		if path == "versions.yaml" {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			idx.source.WriteString("\n")
			idx.source.Write(src)
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // a file that does not parse declares nothing
		}
		pkg := strings.TrimSuffix(f.Name.Name, "_test")
		if idx.top[pkg] == nil {
			idx.top[pkg] = map[string]bool{}
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				idx.idents[decl.Name.Name] = true
				if decl.Recv == nil {
					idx.top[pkg][decl.Name.Name] = true
				} else if typ := receiverType(decl.Recv.List[0].Type); typ != "" {
					member(typ, decl.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						idx.top[pkg][spec.Name.Name] = true
						idx.idents[spec.Name.Name] = true
						var fields *ast.FieldList
						switch typ := spec.Type.(type) {
						case *ast.StructType:
							fields = typ.Fields
						case *ast.InterfaceType:
							fields = typ.Methods
						}
						if fields != nil {
							for _, f := range fields.List {
								for _, id := range f.Names {
									member(spec.Name.Name, id.Name)
								}
								if len(f.Names) == 0 { // embedded: its name is a field too
									member(spec.Name.Name, receiverType(f.Type))
								}
							}
						}
					case *ast.ValueSpec:
						for _, id := range spec.Names {
							idx.top[pkg][id.Name] = true
							idx.idents[id.Name] = true
						}
					}
				}
			}
		}
		for _, imp := range f.Imports {
			name := strings.Trim(imp.Path.Value, `"`)
			name = name[strings.LastIndex(name, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			idx.imported[name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				idx.idents[sel.Sel.Name] = true // a name of another module, such as envtest's BinaryAssetsDirectory
			}
			return true
		})
		idx.idents[pkg] = true
		if !strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			idx.source.Write(src)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// receiverType is the name of a receiver's or an embedded field's type:
// T, *T, T[P], pkg.T.
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}
