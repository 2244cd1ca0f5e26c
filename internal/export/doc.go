// Package export writes tables to CSV or JSON a row at a time: the
// console's export of the page on screen (E) and `lockctl ls --csv`,
// `lockctl events --csv`.
//
// A table's columns come from the structs its rows are read into
// (Columns, Values): each exported field named by its db tag (the
// database's column name), else its json tag; embedded structs add their
// fields in place. A new field in a reader's struct is a new column, with
// no change here. Values are written one way in both formats: times in
// UTC, RFC 3339; durations as whole milliseconds, in a column named with
// _ms; nested values (metadata, an event's detail, a key's holders) as
// JSON, whose structs follow the same rules.
//
// CSV cells hold database text exactly, but for one change: a text cell
// that starts with =, +, -, @, a tab or a carriage return gets a leading
// ' (OWASP's advice against CSV injection), so a spreadsheet opening the
// file shows the text instead of running it as a formula.
package export
