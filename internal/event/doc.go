// Package event is the vocabulary of a race as it happens: the kinds of
// event (the "type" of an events.jsonl line), the payload of each kind
// (its "data", one struct for each source that writes it), the states a
// fork, a run and a verdict can be in, and the sink that fans each event
// out to its subscribers — the record, the terminal progress, and
// whatever comes later (a web view). The race emits every event once; the
// subscribers decide what to do with it.
//
// The string values and the payloads' JSON are the record's schema
// (docs/RECORD.md): changing one changes events.jsonl and run.json.
package event
