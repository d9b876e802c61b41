package world

import (
	"regexp"
	"sync"

	"mvdan.cc/sh/v3/expand"
)

// World is a loaded world: its filesystem and its shell's state.
type World struct {
	FS    *FS
	State State
}

// State is what of the shell survives from one exec to the next.
type State struct {
	Cwd       string
	Turns     int
	Vars      []Var
	Functions []Named
	Aliases   []Named
	// Options are the shell options as the commands that set them ("shopt -o -s errexit").
	Options []string
}

// Named is a function or alias with the shell source that defines it again.
type Named struct {
	Name   string
	Source string
}

// Var is one shell variable.
type Var struct {
	Name string
	expand.Variable
}

// New returns an empty world: /work, a cwd of /work and the default variables.
func New() *World {
	return &World{FS: newFS(nil), State: State{Cwd: "/work", Vars: []Var{
		{Name: "HOME", Variable: expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: "/work"}},
		{Name: "PATH", Variable: expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: "/bin:/usr/bin"}},
		{Name: "TMPDIR", Variable: expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: "/tmp"}},
	}}}
}

var optionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^shopt (-o )?-[su] [a-z_]+$`) })

func knownOption(s string) (string, bool) { return s, optionRE().MatchString(s) }

func (v Var) toJSON() varJSON {
	vj := varJSON{Name: v.Name, Exported: v.Exported, ReadOnly: v.ReadOnly, Unset: !v.Set, Indexes: v.Indexes}
	switch v.Kind {
	case expand.Indexed:
		vj.Kind = "indexed"
		for _, s := range v.List {
			vj.List = append(vj.List, Bytes(s))
		}
	case expand.Associative:
		vj.Kind = "assoc"
		for k, s := range v.Map {
			vj.Map = append(vj.Map, [2]Bytes{Bytes(k), Bytes(s)})
		}
	case expand.Unknown:
		vj.Kind = "unknown"
	case expand.NameRef:
		vj.Kind, vj.Str = "nameref", Bytes(v.Str)
	default:
		vj.Kind, vj.Str = "string", Bytes(v.Str)
	}
	return vj
}

func (vj varJSON) fromJSON() (Var, error) {
	if !validName(vj.Name) {
		return Var{}, formatErr("variable name %q", short(vj.Name))
	}
	v := Var{Name: vj.Name, Variable: expand.Variable{Set: !vj.Unset, Exported: vj.Exported, ReadOnly: vj.ReadOnly}}
	switch vj.Kind {
	case "unknown":
		v.Kind = expand.Unknown
	case "string":
		v.Kind, v.Str = expand.String, string(vj.Str)
	case "nameref":
		v.Kind, v.Str = expand.NameRef, string(vj.Str)
	case "indexed":
		v.Kind = expand.Indexed
		for _, s := range vj.List {
			v.List = append(v.List, string(s))
		}
		if vj.Indexes != nil {
			if len(vj.Indexes) != len(v.List) {
				return Var{}, formatErr("variable %s: %d indexes for %d elements", short(vj.Name), len(vj.Indexes), len(v.List))
			}
			for i, x := range vj.Indexes {
				if x < 0 || i > 0 && x <= vj.Indexes[i-1] {
					return Var{}, formatErr("variable %s: indexes not increasing", short(vj.Name))
				}
			}
			v.Indexes = vj.Indexes
		}
	case "assoc":
		v.Kind, v.Map = expand.Associative, map[string]string{}
		for _, kv := range vj.Map {
			v.Map[string(kv[0])] = string(kv[1])
		}
	default:
		return Var{}, formatErr("variable %s: kind %q", short(vj.Name), short(vj.Kind))
	}
	return v, nil
}
