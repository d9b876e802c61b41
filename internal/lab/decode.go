package lab

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// maxFileBytes bounds what is read of a task or policy file: they are a
// page of settings, never megabytes.
const maxFileBytes = 1 << 20

// checker validates one decoded value; it names the offending key and
// what is wrong, and decodeStrict adds the file and the line.
type checker interface {
	check() (key, reason string)
}

// decodeStrict decodes data (named file in errors) into v, refusing any
// key v does not have and then any value v.check refuses.
func decodeStrict(file string, data []byte, v checker) error {
	if len(data) > maxFileBytes {
		return &FileError{File: file, Reason: fmt.Sprintf("larger than %d bytes", maxFileBytes)}
	}
	// Decoded key by key, so that a value of the wrong type is refused
	// with its key and line (the library's type errors carry neither as
	// data, only in their message).
	var raw map[string]toml.Primitive
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return &FileError{File: file, Line: pe.Position.Line, Key: pe.LastKey, Reason: pe.Message, Err: err}
		}
		return &FileError{File: file, Reason: err.Error(), Err: err}
	}
	fields := tomlFields(v)
	unknown, unknownLine := "", 0
	for key := range raw {
		if _, ok := fields[key]; !ok {
			// The first in the file is named; map order is not the file's.
			if l := keyLine(data, key); unknown == "" || l < unknownLine {
				unknown, unknownLine = key, l
			}
		}
	}
	if unknown != "" {
		return &FileError{File: file, Line: unknownLine, Key: unknown, Reason: "unknown key (see 'forkbomb policy --help' or 'forkbomb task --help')"}
	}
	for key, prim := range raw {
		f := fields[key]
		if err := md.PrimitiveDecode(prim, f.Addr().Interface()); err != nil {
			return &FileError{File: file, Line: keyLine(data, key), Key: key, Reason: "want " + typeName(f.Type()) + ": " + trimTOMLPrefix(err.Error()), Err: err}
		}
	}
	if u := md.Undecoded(); len(u) > 0 {
		key := u[0].String()
		return &FileError{File: file, Line: keyLine(data, key), Key: key, Reason: "unknown key (see 'forkbomb policy --help' or 'forkbomb task --help')"}
	}
	if key, reason := v.check(); key != "" {
		return &FileError{File: file, Line: keyLine(data, key), Key: key, Reason: reason}
	}
	return nil
}

// tomlFields maps the toml tags of the struct v points to onto its fields.
func tomlFields(v any) map[string]reflect.Value {
	rv := reflect.ValueOf(v).Elem()
	out := map[string]reflect.Value{}
	for i := 0; i < rv.NumField(); i++ {
		if tag, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
			out[tag] = rv.Field(i)
		}
	}
	return out
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of strings"
	}
	return t.String()
}

// trimTOMLPrefix drops the library's "toml: ... :" lead, which this
// error says better.
func trimTOMLPrefix(msg string) string {
	if i := strings.LastIndex(msg, "): "); i >= 0 {
		return msg[i+3:]
	}
	return strings.TrimPrefix(msg, "toml: ")
}

// keyLine finds the line that sets key: the files are flat, so a key is
// found by its own name at the start of a line (quoted or bare), or as a
// table header. 0 when it cannot be told.
func keyLine(data []byte, key string) int {
	last := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		last = key[i+1:]
	}
	q := regexp.QuoteMeta(last)
	re := regexp.MustCompile(`^\s*(` + q + `|"` + q + `"|'` + q + `')\s*=|^\s*\[+\s*` + regexp.QuoteMeta(key) + `\s*\]`)
	for i, line := range strings.Split(string(data), "\n") {
		if re.MatchString(line) {
			return i + 1
		}
	}
	return 0
}
