package codeindex

import (
	"context"
	"fmt"
	"strings"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// JSCalls parses the JavaScript and TypeScript files under root (those
// [ChunkJavaScript] reads) with tree-sitter and builds an approximate call
// graph by name, by the rules of [PythonCalls]: every call (f(), x.f(),
// new C()) is attributed to the innermost named function, method or class
// it is in (an anonymous callback's calls to the function around it), and
// resolved by the last name component of the called expression to the
// definitions with that name under root:
//
//   - this.f() inside a method of class C (or an arrow function within one)
//     goes to C.f if C defines f (no base classes are followed), else as
//     x.f() below;
//   - a plain f() or new F() goes to the functions and classes named f (a
//     class stands for its constructor), those of the same file only if the
//     file defines one; methods are not candidates;
//   - x.f() goes to every function, method and class named f.
//
// Definitions are function declarations, classes, methods, and variables,
// class fields and CommonJS exports bound to an arrow function or function
// expression, with the symbols of [ChunkJavaScript]; nested ones are
// "module.outer.inner". Imports, aliases and types are not followed, so a
// call can go to a same-named definition it never reaches, and a call of a
// function passed as a value is unresolved. Folders skipped by the index
// (node_modules among them) and hidden folders are not read; nor are files
// over [DefaultMaxFileSize] or with a syntax error.
func JSCalls(ctx context.Context, root string) (*NameCallGraph, error) {
	p := sitter.NewParser()
	defer p.Close()
	defs := map[string]nameDef{}
	var sites []callSite
	skip := func(string, string) bool { return false }
	match := func(path string) bool { return jsLanguage(path) != nil }
	err := sourceFiles(ctx, root, skip, match, func(rel string, src []byte) error {
		if err := p.SetLanguage(jsLanguage(rel)); err != nil {
			return fmt.Errorf("javascript grammar: %w", err)
		}
		tree := p.Parse(src, nil)
		if tree == nil {
			return nil
		}
		defer tree.Close()
		if !tree.RootNode().HasError() {
			sc := jsScan{rel: rel, mod: JSModule(rel), src: src, defs: defs}
			sc.walk(tree.RootNode(), sc.mod, sc.mod, "")
			sites = append(sites, sc.sites...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("codeindex: javascript calls: %w", err)
	}
	return newNameCallGraph(defs, sites), nil
}

// jsScan records the definitions and call sites of one parsed file.
type jsScan struct {
	rel, mod string
	src      []byte
	defs     map[string]nameDef
	sites    []callSite
}

// walk visits n's children. prefix is the symbol that qualifies a
// definition found there, caller the symbol their calls are attributed to
// and class the class whose this they see ("" outside classes).
func (sc *jsScan) walk(n *sitter.Node, prefix, caller, class string) {
	for i := uint(0); i < n.NamedChildCount(); i++ {
		sc.visit(n.NamedChild(i), prefix, caller, class)
	}
}

func (sc *jsScan) visit(n *sitter.Node, prefix, caller, class string) {
	// def records a definition named name whose body is body.
	def := func(name string, body *sitter.Node, method, isClass bool) {
		d := nameDef{sym: prefix + "." + name, name: name, isClass: isClass}
		if method {
			d.method, d.class = true, class
		}
		sc.defs[d.sym] = d
		inner := class
		switch {
		case isClass:
			inner = d.sym
		case body.Kind() == "function_declaration" || body.Kind() == "generator_function_declaration" ||
			body.Kind() == "function_expression" || body.Kind() == "function" || body.Kind() == "generator_function":
			if !method {
				inner = "" // a function has a this of its own
			}
		}
		sc.walk(body, d.sym, d.sym, inner)
	}
	text := func(c *sitter.Node) string { return c.Utf8Text(sc.src) }
	switch n.Kind() {
	case "function_declaration", "generator_function_declaration", "function_signature":
		if name := n.ChildByFieldName("name"); name != nil {
			def(text(name), n, false, false)
			return
		}
	case "class_declaration", "abstract_class_declaration", "class":
		if name := n.ChildByFieldName("name"); name != nil {
			def(text(name), n, false, true)
			return
		}
	case "method_definition", "method_signature", "abstract_method_signature":
		// Methods of classes; those of object literals and interfaces
		// are no definitions.
		if name := n.ChildByFieldName("name"); name != nil && class != "" {
			def(text(name), n, true, false)
			return
		}
	case "field_definition", "public_field_definition":
		name := n.ChildByFieldName("property")
		if name == nil {
			name = n.ChildByFieldName("name")
		}
		if v := n.ChildByFieldName("value"); name != nil && class != "" && isJSFunction(v) {
			def(text(name), v, true, false)
			return
		}
	case "variable_declarator":
		if name, v := n.ChildByFieldName("name"), n.ChildByFieldName("value"); name != nil && name.Kind() == "identifier" && isJSFunction(v) {
			def(text(name), v, false, false)
			return
		}
	case "export_statement":
		// export default function () {} and export default class {}
		if v := n.ChildByFieldName("value"); v != nil && (isJSFunction(v) || v.Kind() == "class") && v.ChildByFieldName("name") == nil {
			def("default", v, false, v.Kind() == "class")
			return
		}
	case "assignment_expression":
		// exports.f = …, module.exports.f = …, f = …
		left, right := n.ChildByFieldName("left"), n.ChildByFieldName("right")
		if left != nil && left.Kind() == "member_expression" {
			left = left.ChildByFieldName("property")
		}
		if left != nil && (left.Kind() == "identifier" || left.Kind() == "property_identifier") && isJSFunction(right) {
			def(text(left), right, false, false)
			return
		}
	case "call_expression", "new_expression":
		field := "function"
		if n.Kind() == "new_expression" {
			field = "constructor"
		}
		if fn := n.ChildByFieldName(field); fn != nil {
			s := callSite{path: sc.rel, line: pyLine(fn.StartPosition()), caller: caller, class: class, file: sc.mod}
			s.text, _, _ = strings.Cut(text(fn), "\n")
			switch fn.Kind() {
			case "identifier":
				s.name = s.text
			case "member_expression":
				s.attribute = true
				if p := fn.ChildByFieldName("property"); p != nil {
					s.name = text(p)
				}
				if o := fn.ChildByFieldName("object"); o != nil {
					s.self = o.Kind() == "this"
				}
			}
			sc.sites = append(sc.sites, s)
		}
	}
	sc.walk(n, prefix, caller, class)
}
