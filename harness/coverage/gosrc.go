package coverage

import (
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
)

// goSource is what Affected needs to know of a Go file's text: which lines
// hold code (not only comments and blanks) and which top-level declaration
// each line is in.
type goSource struct {
	lines int
	code  map[int]bool
	decls []decl
}

// declKind is what a top-level declaration declares.
type declKind int

const (
	declFunc   declKind = iota // a function or method
	declImport                 // imports
	declOther                  // constants, variables, types
)

// decl is a top-level declaration and the lines it spans.
type decl struct {
	kind       declKind
	start, end int
	// name is a function's ("Name", "Recv.Name") or the names a
	// declaration declares, joined by ", ".
	name string
	// names are the identifiers it declares (declOther).
	names []string
	// method says a function has a receiver.
	method bool
	// sideEffects says it runs code of its own when the program starts:
	// an init function, a blank or dot import, a variable named _.
	sideEffects bool
}

// exported says a declaration declares an identifier other packages see.
func (d decl) exported() bool {
	for _, n := range d.names {
		if token.IsExported(n) {
			return true
		}
	}
	return false
}

// parseGo reads a Go file's text; an error when it does not parse.
func parseGo(src []byte) (*goSource, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	g := &goSource{lines: fset.File(f.Pos()).LineCount(), code: map[int]bool{}}
	line := func(p token.Pos) int { return fset.Position(p).Line }

	var s scanner.Scanner
	file := token.NewFileSet().AddFile("", -1, len(src))
	s.Init(file, src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT || (tok == token.SEMICOLON && lit == "\n") {
			continue
		}
		first := file.Position(pos).Line
		text := lit
		if text == "" {
			text = tok.String()
		}
		for l := first; l <= first+strings.Count(text, "\n"); l++ {
			g.code[l] = true
		}
	}

	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			fd := decl{kind: declFunc, start: line(d.Pos()), end: line(d.End()), name: d.Name.Name}
			if d.Recv != nil && len(d.Recv.List) > 0 {
				fd.method = true
				fd.name = recvName(d.Recv.List[0].Type) + "." + d.Name.Name
			}
			fd.sideEffects = !fd.method && d.Name.Name == "init"
			g.decls = append(g.decls, fd)
		case *ast.GenDecl:
			gd := decl{kind: declOther, start: line(d.Pos()), end: line(d.End())}
			if d.Tok == token.IMPORT {
				gd.kind = declImport
			}
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.ImportSpec:
					if spec.Name != nil && (spec.Name.Name == "_" || spec.Name.Name == ".") {
						gd.sideEffects = true
					}
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						gd.names = append(gd.names, n.Name)
						if n.Name == "_" && len(spec.Values) > 0 {
							gd.sideEffects = true
						}
					}
				case *ast.TypeSpec:
					gd.names = append(gd.names, spec.Name.Name)
				}
			}
			gd.name = strings.Join(gd.names, ", ")
			g.decls = append(g.decls, gd)
		}
	}
	return g, nil
}

// recvName is the type name of a method's receiver, without pointer and
// type parameters.
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

// declAt is the top-level declaration that spans line, or nil (the package
// clause, or between declarations).
func (g *goSource) declAt(line int) *decl {
	for i := range g.decls {
		if g.decls[i].start <= line && line <= g.decls[i].end {
			return &g.decls[i]
		}
	}
	return nil
}

// funcNamed is the function or method of that name ("Recv.Name"), or nil.
func (g *goSource) funcNamed(name string) *decl {
	for i := range g.decls {
		if g.decls[i].kind == declFunc && g.decls[i].name == name {
			return &g.decls[i]
		}
	}
	return nil
}

// declares says a declaration of g declares the identifier.
func (g *goSource) declares(name string) bool {
	for _, d := range g.decls {
		for _, n := range d.names {
			if n == name {
				return true
			}
		}
	}
	return false
}
