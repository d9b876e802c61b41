package world

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// ~user is looked up by the expander in the host's user database (os/user reads /etc/passwd),
// which is the host. The world's environment answers "HOME user" lookups in the main shell, but
// a pipeline stage or background job runs on a copy of the variables without that answer, so
// ~user is refused before any code runs: in the script, and in code that reaches the parser
// later (eval, source, ., trap, alias).
var tildeUser = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[:=])~[^/:]`) })

func checkTildeUser(node syntax.Node) error {
	var bad string
	syntax.Walk(node, func(n syntax.Node) bool {
		if bad != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.Word:
			if len(n.Parts) > 0 {
				if lit, ok := n.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") && tildeUser().MatchString(lit.Value) {
					bad = lit.Value
				}
			}
		case *syntax.Assign:
			if n.Value != nil {
				for _, p := range n.Value.Parts {
					if lit, ok := p.(*syntax.Lit); ok && strings.Contains(lit.Value, ":~") && tildeUser().MatchString(lit.Value) {
						bad = lit.Value
					}
				}
			}
		}
		return true
	})
	if bad != "" {
		return fmt.Errorf("%q: ~user expansion is not available in a world (it would read the host's user database)", bad)
	}
	return nil
}

// checkDynamic parses what eval, trap and alias are about to make code of and checks it.
func checkDynamic(args []string) error {
	var src string
	switch args[0] {
	case "eval":
		src = strings.Join(args[1:], " ")
	case "trap":
		if len(args) > 1 {
			src = args[1]
		}
	case "alias":
		for _, a := range args[1:] {
			if _, v, ok := strings.Cut(a, "="); ok {
				src += v + "\n"
			}
		}
	default:
		return nil
	}
	f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	if err != nil {
		return nil // the builtin reports its own syntax error
	}
	return checkTildeUser(f)
}
