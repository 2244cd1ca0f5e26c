package export

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// Columns names the columns of a row of v's type (a struct or a pointer
// to one): its fields in order, as Values gives their values.
func Columns(v any) []string {
	var names []string
	walk(reflect.ValueOf(v), func(name string, _ reflect.Value) { names = append(names, name) })
	return names
}

// Values are the values of v's fields, in Columns' order, each as Write
// takes it.
func Values(v any) []any {
	var values []any
	walk(reflect.ValueOf(v), func(_ string, f reflect.Value) { values = append(values, normal(f)) })
	return values
}

// Value is v as Write takes it, written as a field of its type would be.
func Value(v any) any { return normal(reflect.ValueOf(v)) }

var durationType = reflect.TypeFor[time.Duration]()

// walk calls fn with each column's name and field of the struct v.
func walk(v reflect.Value, fn func(name string, field reflect.Value)) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v = reflect.New(v.Type().Elem())
		}
		v = v.Elem()
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := fieldName(f)
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			walk(v.Field(i), fn) // its fields are the row's, as encoding/json has it
			continue
		}
		if name == "" {
			continue
		}
		if f.Type == durationType {
			name += "_ms"
		}
		fn(name, v.Field(i))
	}
}

// fieldName is f's column: its db tag, else its json tag; "" leaves the
// field out.
func fieldName(f reflect.StructField) string {
	for _, tag := range []string{"db", "json"} {
		name, _, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "-" {
			return ""
		}
		if name != "" {
			return name
		}
	}
	return ""
}

// normal is f's value as the writers take it: nil, a string, a number, a
// bool, or a nested value as JSON (json.RawMessage).
func normal(f reflect.Value) any {
	f, ok := deref(f)
	if !ok || (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f.IsNil() {
		return nil // an empty cell
	}
	switch {
	case f.Type() == durationType:
		return time.Duration(f.Int()).Milliseconds()
	case f.Type() == reflect.TypeFor[time.Time]():
		return timeText(f.Interface().(time.Time))
	}
	switch f.Kind() {
	case reflect.String:
		return f.String()
	case reflect.Bool:
		return f.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return f.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return f.Uint()
	case reflect.Float32, reflect.Float64:
		return f.Float()
	}
	b, err := marshal(nested(f))
	if err != nil {
		return nil
	}
	return json.RawMessage(b)
}

// nested is a value inside a column (a map, a slice, a struct) for
// encoding/json, with the columns' rules: a struct becomes an object of
// its columns, times and durations are written as Values writes them.
func nested(f reflect.Value) any {
	f, ok := deref(f)
	if !ok {
		return nil
	}
	switch {
	case f.Type() == durationType, f.Type() == reflect.TypeFor[time.Time]():
		return normal(f)
	}
	switch f.Kind() {
	case reflect.Struct:
		obj := object{}
		walk(f, func(name string, field reflect.Value) { obj = append(obj, member{name, nested(field)}) })
		return obj
	case reflect.Slice, reflect.Array:
		if f.Kind() == reflect.Slice && f.IsNil() {
			return nil
		}
		out := make([]any, f.Len())
		for i := range out {
			out[i] = nested(f.Index(i))
		}
		return out
	case reflect.Map:
		if f.IsNil() {
			return nil
		}
		out := make(map[string]any, f.Len())
		iter := f.MapRange()
		for iter.Next() {
			out[fmtKey(iter.Key())] = nested(iter.Value())
		}
		return out
	}
	return f.Interface()
}

// deref follows pointers and interfaces to the value; false for nil.
func deref(f reflect.Value) (reflect.Value, bool) {
	for f.IsValid() && (f.Kind() == reflect.Pointer || f.Kind() == reflect.Interface) {
		if f.IsNil() {
			return f, false
		}
		f = f.Elem()
	}
	return f, f.IsValid()
}

func fmtKey(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	b, _ := json.Marshal(k.Interface())
	return strings.Trim(string(b), `"`)
}

// timeText is how a time is written: UTC, RFC 3339 to the nanosecond the
// database gave (microseconds for PostgreSQL).
func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// object is a JSON object whose members keep their order.
type object []member

type member struct {
	name  string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		name, err := marshal(m.name)
		if err != nil {
			return nil, err
		}
		value, err := marshal(m.value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, name...), ':'), value...)
	}
	return append(b, '}'), nil
}
