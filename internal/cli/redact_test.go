package cli

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://app:sekrit@db:5432/app?sslmode=disable", "postgres://app:xxxxx@db:5432/app?sslmode=disable"},
		{"postgresql://app:se%40krit@db/app", "postgresql://app:xxxxx@db/app"},
		{"postgres://app@db/app", "postgres://app@db/app"},
		{"postgres://db/app?user=app&password=sekrit&sslpassword=s2", "postgres://db/app?user=app&password=xxxxx&sslpassword=xxxxx"},
		{"postgres://app:sek/rit@db/app", "postgres://app:xxxxx@db/app"},
		{"postgres://app:sek?rit@db/app", "postgres://app:xxxxx@db/app"},
		{"postgres://a:p@h1:5432,h2:5433/app", "postgres://a:xxxxx@h1:5432,h2:5433/app"},
		{"host=db user=app password=sekrit dbname=app", "host=db user=app password=xxxxx dbname=app"},
		{"host=db password='se cr\\'et' user=app", "host=db password=xxxxx user=app"},
		{"password = sekrit host=db", "password = xxxxx host=db"},
		{"host=db sslpassword=s2", "host=db sslpassword=xxxxx"},
		{"host=db password='unterminated", "host=db password=xxxxx"},
		{"", ""},
	}
	for _, c := range cases {
		if got := RedactDSN(c.in); got != c.want {
			t.Errorf("RedactDSN(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestDSNPasswords(t *testing.T) {
	got := dsnPasswords("postgres://app:se%40krit@db/app?password=two")
	for _, want := range []string{"se%40krit", "se@krit", "two"} {
		if !contains(got, want) {
			t.Errorf("dsnPasswords = %q; want %q among them", got, want)
		}
	}
	got = dsnPasswords(`host=db password='it\'s'`)
	if !contains(got, "it's") {
		t.Errorf("dsnPasswords = %q; want the unescaped password", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzRedactDSN: whatever the password, it never survives redaction, in
// either DSN form, and odd input never panics.
func FuzzRedactDSN(f *testing.F) {
	for _, s := range []string{"sekrit", "p@ss/w?rd#", "it's 'quoted'", `back\slash`, "", " ", "a=b c=d", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, password string) {
		_ = RedactDSN(password) // arbitrary text as a whole DSN: must not panic
		secret := "Zq9" + password + "Zq9"
		forms := []string{
			"postgres://" + url.UserPassword("app", secret).String() + "@db:5432/app?sslmode=disable",
			"postgres://db/app?password=" + url.QueryEscape(secret) + "&user=app",
			"host=db password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret) + "' user=app",
		}
		for _, dsn := range forms {
			if got := RedactDSN(dsn); strings.Contains(got, "Zq9") {
				t.Fatalf("RedactDSN(%q) = %q: password shown", dsn, got)
			}
		}
	})
}
