package sandbox

import "fmt"

// PolicyError says which setting of a Policy is refused and why, in the
// Policy's own terms: Field is the name of a Policy field ("ReadOnly",
// "Workdir", "Env"...), Value the offending entry (a path, a variable
// name) or "" for the field as a whole. Only the caller knows how its user
// spelled the setting — a flag of the sandbox command (--ro), a setting of
// the judge (--hidden), or something the caller chose itself — so the
// caller words it: Setting returns a copy called by the caller's name.
// Every PolicyError is an ErrInvalidPolicy, and its cause (an fs error,
// say) stays reachable through Unwrap.
type PolicyError struct {
	Field  string // a Policy field name
	Value  string // the offending value; "" for the field as a whole
	Reason string // what is wrong with it, for a person
	Err    error  // the cause, if any
	// Name is how the error names the setting; "" is Field. Set it with
	// Setting, never in place: the library's error stays the library's.
	Name string
}

func policyErr(field, value, reason string, a ...any) *PolicyError {
	return &PolicyError{Field: field, Value: value, Reason: fmt.Sprintf(reason, a...)}
}

func (e *PolicyError) Error() string {
	return ErrInvalidPolicy.Error() + ": " + e.Message()
}

// Message is the error without its "invalid sandbox policy" prefix:
// "NAME VALUE: REASON".
func (e *PolicyError) Message() string {
	name := e.Name
	if name == "" {
		name = e.Field
	}
	switch {
	case name == "":
		return e.Reason
	case e.Value == "":
		return name + ": " + e.Reason
	}
	return name + " " + e.Value + ": " + e.Reason
}

// Setting returns a copy of e that names the setting name (a flag, a
// setting of the caller) instead of the Policy field.
func (e *PolicyError) Setting(name string) *PolicyError {
	c := *e
	c.Name = name
	return &c
}

// Is makes every PolicyError an ErrInvalidPolicy.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidPolicy }

func (e *PolicyError) Unwrap() error { return e.Err }
