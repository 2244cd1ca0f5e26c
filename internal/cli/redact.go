package cli

import (
	"net/url"
	"strings"
)

// redacted replaces a password wherever one would be shown.
const redacted = "xxxxx"

// RedactDSN returns dsn with every password replaced by xxxxx: the userinfo
// password and password-like query parameters (password, sslpassword) of a
// URL, and password-like keywords of a keyword/value string. A malformed
// URL is masked generously rather than risk showing part of a password.
func RedactDSN(dsn string) string {
	out, _ := redactDSN(dsn)
	return out
}

// dsnPasswords returns the passwords written in dsn, both as written and
// decoded, so they can be scrubbed from messages that quote them.
func dsnPasswords(dsn string) []string {
	_, secrets := redactDSN(dsn)
	return secrets
}

func redactDSN(dsn string) (string, []string) {
	for _, prefix := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(dsn, prefix); ok {
			return redactURL(prefix, rest)
		}
	}
	return redactKeywords(dsn)
}

func isPasswordKey(key string) bool {
	return strings.Contains(strings.ToLower(key), "password")
}

// redactURL masks the userinfo password and password query values of the
// part of a URL after its scheme.
func redactURL(prefix, rest string) (string, []string) {
	var secrets []string
	addSecret := func(raw string) {
		if raw == "" {
			return
		}
		secrets = append(secrets, raw)
		if dec, err := url.PathUnescape(raw); err == nil && dec != raw {
			secrets = append(secrets, dec)
		}
		if dec, err := url.QueryUnescape(raw); err == nil && dec != raw {
			secrets = append(secrets, dec)
		}
	}
	var b strings.Builder
	b.WriteString(prefix)

	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	at := strings.LastIndex(rest[:authEnd], "@")
	if at < 0 {
		// A password holding an unescaped '/', '?' or '#' pushes the '@'
		// past where the authority seems to end: mask from the first ':' of
		// the authority to the last '@' of the whole string.
		if last := strings.LastIndex(rest, "@"); last >= 0 {
			if colon := strings.IndexByte(rest[:authEnd], ':'); colon >= 0 {
				at = last
			}
		}
	}
	if at >= 0 {
		userinfo := rest[:at]
		if user, pass, ok := strings.Cut(userinfo, ":"); ok {
			addSecret(pass)
			b.WriteString(user + ":" + redacted)
		} else {
			b.WriteString(userinfo)
		}
		b.WriteByte('@')
		rest = rest[at+1:]
	}

	qi := strings.IndexByte(rest, '?')
	if qi < 0 {
		b.WriteString(rest)
		return b.String(), secrets
	}
	b.WriteString(rest[:qi+1])
	query, fragment, hasFragment := strings.Cut(rest[qi+1:], "#")
	for i, param := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		key, value, hasValue := strings.Cut(param, "=")
		decodedKey, err := url.QueryUnescape(key)
		if err != nil {
			decodedKey = key
		}
		if hasValue && isPasswordKey(decodedKey) {
			addSecret(value)
			b.WriteString(key + "=" + redacted)
			continue
		}
		b.WriteString(param)
	}
	if hasFragment {
		b.WriteString("#" + fragment)
	}
	return b.String(), secrets
}

// redactKeywords masks password values of a libpq keyword/value string
// ("host=db user=app password='s3 cret'"), keeping the rest byte for byte.
func redactKeywords(s string) (string, []string) {
	var b strings.Builder
	var secrets []string
	i := 0
	for i < len(s) {
		// Copy whitespace and the keyword up to '=' as written.
		start := i
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		keyStart := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[keyStart:i]
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			// Not a keyword=value pair: copy it and go on.
			b.WriteString(s[start:i])
			continue
		}
		i++ // '='
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		b.WriteString(s[start:i])
		valueStart := i
		value, end := scanValue(s, i)
		i = end
		if isPasswordKey(key) {
			b.WriteString(redacted)
			if value != "" {
				secrets = append(secrets, value)
			}
			if raw := s[valueStart:end]; raw != value && raw != "" {
				secrets = append(secrets, raw)
			}
			continue
		}
		b.WriteString(s[valueStart:end])
	}
	return b.String(), secrets
}

// scanValue reads a keyword's value at s[i:], quoted ('...', with \' and
// \\) or bare (up to whitespace, with backslash escapes), as libpq does. It
// returns the unescaped value and the index after it. An unterminated quote
// runs to the end.
func scanValue(s string, i int) (string, int) {
	var v strings.Builder
	if i < len(s) && s[i] == '\'' {
		i++
		for i < len(s) {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				v.WriteByte(s[i+1])
				i += 2
			case c == '\'':
				return v.String(), i + 1
			default:
				v.WriteByte(c)
				i++
			}
		}
		return v.String(), i
	}
	for i < len(s) && !isSpace(s[i]) {
		if s[i] == '\\' && i+1 < len(s) {
			v.WriteByte(s[i+1])
			i += 2
			continue
		}
		v.WriteByte(s[i])
		i++
	}
	return v.String(), i
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
