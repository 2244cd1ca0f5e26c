package sshserve

import (
	"errors"
	"strings"
	"testing"
)

// A fixed Ed25519 public key (ssh-keygen output) for the parsing table.
const testPub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGc2kT6CQbnuPLXOnV0e1uUkhMV8XaE3rtj4vjxB8UwQ"

func TestParseAuthorizedKeys(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Identity // Fingerprint not compared
		wantErr string
	}{
		{name: "operator", line: `role="operator",actor="alice" ` + testPub + ` alice@laptop`,
			want: Identity{Actor: "alice", Role: RoleOperator}},
		{name: "viewer, options in either order", line: `actor="bob",role="viewer" ` + testPub,
			want: Identity{Actor: "bob", Role: RoleViewer}},
		{name: "actor with spaces and a quote", line: `role="viewer",actor="Bob \"B\" Smith" ` + testPub,
			want: Identity{Actor: `Bob "B" Smith`, Role: RoleViewer}},
		{name: "option names are case-insensitive", line: `ROLE="viewer",Actor="bob" ` + testPub,
			want: Identity{Actor: "bob", Role: RoleViewer}},
		{name: "no options", line: testPub, wantErr: "no role option"},
		{name: "no actor", line: `role="viewer" ` + testPub, wantErr: "no actor option"},
		{name: "empty actor", line: `role="viewer",actor="" ` + testPub, wantErr: "actor is empty"},
		{name: "unknown role", line: `role="admin",actor="x" ` + testPub, wantErr: `unknown role "admin"`},
		{name: "role twice", line: `role="viewer",role="operator",actor="x" ` + testPub, wantErr: "role given twice"},
		{name: "sshd's restrictions are not silently ignored", line: `from="10.0.0.0/8",role="viewer",actor="x" ` + testPub,
			wantErr: `unsupported option "from"`},
		{name: "bare flag", line: `no-pty,role="viewer",actor="x" ` + testPub, wantErr: `unsupported option "no-pty"`},
		{name: "control character in actor", line: "role=\"viewer\",actor=\"a\x1b[2Jb\" " + testPub, wantErr: "control character"},
		{name: "actor too long", line: `role="viewer",actor="` + strings.Repeat("a", 256) + `" ` + testPub, wantErr: "more than 255"},
		{name: "not a key", line: `role="viewer",actor="x" ssh-ed25519 notbase64`, wantErr: "no key found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, errs := parseAuthorizedKeys([]byte("# comment\n\n" + tt.line + "\n"))
			if tt.wantErr != "" {
				if len(entries) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.wantErr) {
					t.Fatalf("got %d entries, errors %v; want one error containing %q", len(entries), errs, tt.wantErr)
				}
				if !errors.Is(errs[0], errKeyLine) || !strings.Contains(errs[0].Error(), "line 3") {
					t.Errorf("error %q does not name line 3", errs[0])
				}
				return
			}
			if len(errs) != 0 || len(entries) != 1 {
				t.Fatalf("got %d entries, errors %v; want one entry", len(entries), errs)
			}
			got := entries[0].Identity
			if got.Actor != tt.want.Actor || got.Role != tt.want.Role || !strings.HasPrefix(got.Fingerprint, "SHA256:") {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A key listed twice keeps its first line (sshd uses the first match) and
// the second is reported.
func TestParseAuthorizedKeysDuplicate(t *testing.T) {
	data := `role="viewer",actor="bob" ` + testPub + "\n" + `role="operator",actor="bob" ` + testPub + "\n"
	entries, errs := parseAuthorizedKeys([]byte(data))
	if len(entries) != 1 || entries[0].Role != RoleViewer {
		t.Fatalf("entries %+v; want the first line's viewer only", entries)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "already listed on line 1") {
		t.Errorf("errors %v; want the duplicate reported", errs)
	}
}

func TestRoleCanAct(t *testing.T) {
	if RoleViewer.CanAct() || !RoleOperator.CanAct() || Role("").CanAct() {
		t.Error("only the operator role may act")
	}
}
