package api

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// schemaTypes are the bodies schema/v1.json describes, by the name of
// their definition, each as encoding/json writes it (Lock and Holder
// through their wire forms).
var schemaTypes = map[string]reflect.Type{
	"AcquireRequest":      reflect.TypeFor[AcquireRequest](),
	"AcquireResponse":     reflect.TypeFor[AcquireResponse](),
	"KeyFence":            reflect.TypeFor[KeyFence](),
	"ReleaseRequest":      reflect.TypeFor[ReleaseRequest](),
	"ReleaseResponse":     reflect.TypeFor[ReleaseResponse](),
	"ExtendRequest":       reflect.TypeFor[ExtendRequest](),
	"ExtendResponse":      reflect.TypeFor[ExtendResponse](),
	"ForceReleaseRequest": reflect.TypeFor[ForceReleaseRequest](),
	"Lock":                reflect.TypeFor[lockJSON](),
	"Holder":              reflect.TypeFor[holderJSON](),
	"Waiting":             reflect.TypeFor[Waiting](),
	"WatchQuery":          reflect.TypeFor[WatchQuery](),
	"LockList":            reflect.TypeFor[LockList](),
	"WaitEdge":            reflect.TypeFor[WaitEdge](),
	"Status":              reflect.TypeFor[Status](),
	"Peer":                reflect.TypeFor[Peer](),
	"NodeInfo":            reflect.TypeFor[NodeInfo](),
	"JoinRequest":         reflect.TypeFor[JoinRequest](),
	"LeaveRequest":        reflect.TypeFor[LeaveRequest](),
	"Ready":               reflect.TypeFor[Ready](),
	"ErrorBody":           reflect.TypeFor[ErrorBody](),
}

// wireNames maps the Go types that marshal through another type to the
// definition that describes them.
var wireNames = map[reflect.Type]string{
	reflect.TypeFor[Lock]():   "Lock",
	reflect.TypeFor[Holder](): "Holder",
}

type schemaDoc struct {
	Schema string                `json:"$schema"`
	Defs   map[string]schemaNode `json:"$defs"`
}

type schemaNode struct {
	Type                 string                `json:"type"`
	Ref                  string                `json:"$ref"`
	Properties           map[string]schemaNode `json:"properties"`
	Required             []string              `json:"required"`
	AdditionalProperties json.RawMessage       `json:"additionalProperties"`
	Items                *schemaNode           `json:"items"`
}

// TestSchema_MatchesTheGoTypes keeps schema/v1.json, the schema other
// clients are written against, equal to the Go types the node decodes and
// encodes: every definition is a type, every JSON field of the type a
// property of its JSON type (a nested body by its $ref), the fields
// encoding/json always writes are required and no other, and a request
// refuses properties it does not name, as the node does.
func TestSchema_MatchesTheGoTypes(t *testing.T) {
	raw, err := os.ReadFile("schema/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc schemaDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("schema/v1.json: %v", err)
	}
	if doc.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q, want draft 2020-12", doc.Schema)
	}
	for name := range doc.Defs {
		if _, ok := schemaTypes[name]; !ok {
			t.Errorf("schema defines %s, which is no type of package api", name)
		}
	}
	for name, typ := range schemaTypes {
		def, ok := doc.Defs[name]
		if !ok {
			t.Errorf("schema has no definition of %s", name)
			continue
		}
		checkObject(t, name, typ, def)
	}
}

func checkObject(t *testing.T, name string, typ reflect.Type, def schemaNode) {
	t.Helper()
	if def.Type != "object" {
		t.Errorf("%s: type %q, want object", name, def.Type)
	}
	if strings.HasSuffix(name, "Request") && string(def.AdditionalProperties) != "false" {
		t.Errorf("%s: a request must say additionalProperties: false (the node refuses unknown fields)", name)
	}
	var required []string
	seen := map[string]bool{}
	for _, f := range jsonFieldsOf(typ) {
		seen[f.name] = true
		if !f.omitempty {
			required = append(required, f.name)
		}
		prop, ok := def.Properties[f.name]
		if !ok {
			t.Errorf("%s: field %s (%s) is not in the schema", name, f.name, f.typ)
			continue
		}
		checkValue(t, name+"."+f.name, f.typ, prop)
	}
	for p := range def.Properties {
		if !seen[p] {
			t.Errorf("%s: the schema's property %s is no field of the Go type", name, p)
		}
	}
	slices.Sort(required)
	got := slices.Sorted(slices.Values(def.Required))
	if !slices.Equal(got, required) {
		t.Errorf("%s: required %v, want %v (the fields without omitempty)", name, got, required)
	}
}

// checkValue checks that the schema node of a field holds what encoding/json
// writes for a value of typ.
func checkValue(t *testing.T, at string, typ reflect.Type, node schemaNode) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if name, ok := wireNames[typ]; ok {
		if want := "#/$defs/" + name; node.Ref != want {
			t.Errorf("%s: $ref %q, want %q", at, node.Ref, want)
		}
		return
	}
	var want string
	switch typ.Kind() {
	case reflect.String:
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "integer"
	case reflect.Float32, reflect.Float64:
		want = "number"
	case reflect.Slice, reflect.Array:
		want = "array"
	case reflect.Map:
		want = "object"
	case reflect.Struct:
		for name, st := range schemaTypes {
			if st == typ {
				if want := "#/$defs/" + name; node.Ref != want {
					t.Errorf("%s: $ref %q, want %q", at, node.Ref, want)
				}
				return
			}
		}
		t.Errorf("%s: %s is a body the schema does not define", at, typ)
		return
	}
	if node.Type != want {
		t.Errorf("%s: schema type %q, want %q (Go %s)", at, node.Type, want, typ)
		return
	}
	switch typ.Kind() {
	case reflect.Slice, reflect.Array:
		if node.Items == nil {
			t.Errorf("%s: an array without items", at)
			return
		}
		checkValue(t, at+"[]", typ.Elem(), *node.Items)
	case reflect.Map:
		var items schemaNode
		if err := json.Unmarshal(node.AdditionalProperties, &items); err != nil {
			t.Errorf("%s: a map's values must be described by additionalProperties: %v", at, err)
			return
		}
		checkValue(t, at+"{}", typ.Elem(), items)
	}
}

type jsonField struct {
	name      string
	typ       reflect.Type
	omitempty bool
}

// jsonFieldsOf lists the fields encoding/json writes for the struct typ,
// those of embedded structs included.
func jsonFieldsOf(typ reflect.Type) []jsonField {
	var out []jsonField
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFieldsOf(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: f.Type, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty")})
	}
	return out
}
