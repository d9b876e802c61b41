package mutant

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
)

// Go operators, named as gremlins names its (so a comparison reads
// across): conditionals boundary and negation, arithmetic, increments and
// decrements, inverted negatives and logic, plus returned values and
// removed statements (mutmut's and Stryker's), which gremlins lacks.
var (
	goBoundary = map[token.Token]string{token.LSS: "<=", token.LEQ: "<", token.GTR: ">=", token.GEQ: ">"}
	goNegation = map[token.Token]string{token.EQL: "!=", token.NEQ: "==", token.LSS: ">=", token.LEQ: ">", token.GTR: "<=", token.GEQ: "<"}
	goArith    = map[token.Token]string{token.ADD: "-", token.SUB: "+", token.MUL: "/", token.QUO: "*", token.REM: "*",
		token.ADD_ASSIGN: "-=", token.SUB_ASSIGN: "+=", token.MUL_ASSIGN: "/=", token.QUO_ASSIGN: "*=", token.REM_ASSIGN: "*="}
	goLogical = map[token.Token]string{token.LAND: "||", token.LOR: "&&"}
	goIncDec  = map[token.Token]string{token.INC: "--", token.DEC: "++"}
)

// goMutants walks a Go file's AST. Without type information a mutant may
// not compile (string + becomes string -): the run classifies it so, and
// it costs one build.
func goMutants(file string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var ms []Mutant
	op := func(name string, start token.Pos, tok token.Token, repl string) {
		s := off(start)
		ms = append(ms, Mutant{Operator: name, Start: s, End: s + len(tok.String()), Replacement: repl})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			// constants and package variables: mutating them changes a
			// type or a compile-time value more often than behaviour
			return n.Tok != token.CONST && n.Tok != token.VAR
		case *ast.BinaryExpr:
			if r, ok := goBoundary[n.Op]; ok {
				op("CONDITIONALS_BOUNDARY", n.OpPos, n.Op, r)
			}
			if r, ok := goNegation[n.Op]; ok {
				op("CONDITIONALS_NEGATION", n.OpPos, n.Op, r)
			}
			if r, ok := goArith[n.Op]; ok {
				op("ARITHMETIC_BASE", n.OpPos, n.Op, r)
			}
			if r, ok := goLogical[n.Op]; ok {
				op("INVERT_LOGICAL", n.OpPos, n.Op, r)
			}
		case *ast.AssignStmt:
			if r, ok := goArith[n.Tok]; ok {
				op("INVERT_ASSIGNMENTS", n.TokPos, n.Tok, r)
			}
		case *ast.IncDecStmt:
			op("INCREMENT_DECREMENT", n.TokPos, n.Tok, goIncDec[n.Tok])
		case *ast.UnaryExpr:
			switch n.Op {
			case token.NOT:
				op("INVERT_NEGATIVES", n.OpPos, n.Op, "")
			case token.SUB:
				op("INVERT_NEGATIVES", n.OpPos, n.Op, "+")
			}
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				if repl, ok := zeroOf(r); ok {
					ms = append(ms, Mutant{Operator: "RETURN_VALUE", Start: off(r.Pos()), End: off(r.End()), Replacement: repl})
				}
			}
		case *ast.BlockStmt:
			for _, st := range n.List {
				if removable(st) {
					// a statement becomes an empty one: `;` keeps a
					// label or a one-statement block well-formed
					ms = append(ms, Mutant{Operator: "REMOVE_STATEMENT", Start: off(st.Pos()), End: off(st.End()), Replacement: ";"})
				}
			}
		}
		return true
	})
	return finish(file, src, ms), nil
}

// zeroOf is what a returned expression is mutated to: a boolean flipped,
// a number made 0 (or 1 when it is 0), a string made empty, an error made
// nil. Other expressions are left alone (their zero needs their type).
func zeroOf(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		switch e.Name {
		case "true":
			return "false", true
		case "false":
			return "true", true
		case "err":
			return "nil", true
		}
	case *ast.BasicLit:
		switch e.Kind {
		case token.INT, token.FLOAT:
			if e.Value == "0" {
				return "1", true
			}
			return "0", true
		case token.STRING:
			if e.Value != `""` && e.Value != "``" {
				return `""`, true
			}
		}
	}
	return "", false
}

// removable: statements whose removal is a behaviour change that still
// compiles most of the time (a call for its effect, an assignment to
// something that exists, an increment).
func removable(st ast.Stmt) bool {
	switch st := st.(type) {
	case *ast.ExprStmt:
		_, call := st.X.(*ast.CallExpr)
		return call
	case *ast.AssignStmt:
		return st.Tok != token.DEFINE
	case *ast.IncDecStmt:
		return true
	}
	return false
}
