package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// Format is a file format a table is written in.
type Format string

const (
	CSV  Format = "csv"
	JSON Format = "json"
)

// FormatOf is the format a file name's extension asks for: .csv or .json,
// in any case.
func FormatOf(path string) (Format, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".csv":
		return CSV, nil
	case ".json":
		return JSON, nil
	case "":
		return "", errors.New("no extension: end the name in .csv or .json")
	default:
		return "", fmt.Errorf("%s is not a format: end the name in .csv or .json", ext)
	}
}

// Writer writes a table a row at a time: nothing is held but the row
// being written. Close ends the table (a table of no rows is its header,
// or []), but does not close the io.Writer.
type Writer interface {
	// Write writes one row: a value per column, as Values gives them (nil,
	// strings, numbers, bools, json.RawMessage).
	Write(values []any) error
	Close() error
}

// New returns a writer of format f on w, for rows of columns.
func New(f Format, w io.Writer, columns []string) Writer {
	if f == JSON {
		return &jsonWriter{w: w, columns: columns}
	}
	return NewCSV(w, columns, nil)
}

// NewCSV returns a CSV writer on w: a header of columns, then a line per
// row. escape, when set, rewrites each cell's text last (the CLI passes
// textsafe.Escape when standard output is a terminal); nil keeps it.
func NewCSV(w io.Writer, columns []string, escape func(string) string) Writer {
	return &csvWriter{w: csv.NewWriter(w), columns: columns, escape: escape}
}

type csvWriter struct {
	w       *csv.Writer
	columns []string
	escape  func(string) string
	started bool
	cells   []string
}

func (c *csvWriter) header() error {
	if c.started {
		return nil
	}
	c.started = true
	return c.w.Write(c.columns)
}

func (c *csvWriter) Write(values []any) error {
	if err := c.header(); err != nil {
		return err
	}
	c.cells = c.cells[:0]
	for _, v := range values {
		cell := csvCell(v)
		if c.escape != nil {
			cell = c.escape(cell)
		}
		c.cells = append(c.cells, cell)
	}
	return c.w.Write(c.cells)
}

func (c *csvWriter) Close() error {
	if err := c.header(); err != nil {
		return err
	}
	c.w.Flush()
	return c.w.Error()
}

// csvCell is v's cell: text guarded against formulas, numbers and bools
// as Go writes them, nested values as JSON, nil as an empty cell.
func csvCell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return guard(v)
	case json.RawMessage:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return guard(fmt.Sprint(v))
}

// guard puts ' before text a spreadsheet would take for a formula (OWASP,
// CSV injection): one starting with =, +, -, @, a tab or a carriage
// return. Other text is kept exactly.
func guard(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// jsonWriter writes one JSON array of objects, an object a line, each
// with the columns as members in order.
type jsonWriter struct {
	w       io.Writer
	columns []string
	n       int
}

func (j *jsonWriter) Write(values []any) error {
	obj := make(object, len(j.columns))
	for i, name := range j.columns {
		obj[i] = member{name: name}
		if i < len(values) {
			obj[i].value = values[i]
		}
	}
	b, err := marshal(obj)
	if err != nil {
		return err
	}
	sep := ",\n"
	if j.n == 0 {
		sep = "[\n"
	}
	j.n++
	if _, err := io.WriteString(j.w, sep); err != nil {
		return err
	}
	_, err = j.w.Write(b)
	return err
}

func (j *jsonWriter) Close() error {
	end := "\n]\n"
	if j.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(j.w, end)
	return err
}

// marshal is json.Marshal without HTML escaping: a key holding < or & is
// written as it is.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
