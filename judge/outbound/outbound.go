// Package outbound finds personal data and secrets in text a tool call is
// about to send outside the machine (a pull request body, a chat message,
// an HTTP request body), and redacts them. It is the detector behind the
// prime directives PRIVACY_NO_PII and NO_SECRETS_OUTBOUND.
//
// Secrets are found by the store firewall's detector (gitleaks' maintained
// rule set, store/firewall/gitleaks, wherever the process has installed
// it) and, as a floor that needs no detector, a few unambiguous token
// shapes (cloud and forge token prefixes, private key headers). Personal
// data has no maintained Go detector; the rules here validate what they
// match: payment cards by Luhn and issuer prefix, IBANs by country length
// and ISO 7064 mod 97, US social security numbers by their valid ranges,
// UK national insurance numbers by their prefix rules.
//
// Documentation data is not personal data: addresses at the reserved
// example domains (RFC 2606, RFC 6761), the fictitious 555-0100–0199
// phone range, the card numbers payment processors publish for tests, the
// IBANs banks publish as examples and the SSNs the SSA voided after they
// were printed in advertising are left alone.
package outbound

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/docket/docket/store/firewall"
)

// Kind is the kind of a finding.
type Kind string

const (
	Email         Kind = "email"
	Phone         Kind = "phone"
	PaymentCard   Kind = "payment_card"
	IBAN          Kind = "iban"
	NationalID    Kind = "national_id"
	StreetAddress Kind = "street_address"
	Secret        Kind = "secret"
)

// PIIKinds lists every personal-data kind.
var PIIKinds = []Kind{Email, Phone, PaymentCard, IBAN, NationalID, StreetAddress}

// Finding is one match: text[Start:End] is what must not leave.
type Finding struct {
	Kind  Kind
	Rule  string // the rule that matched (a gitleaks rule id for secrets)
	Start int
	End   int
	// Encoded is set when the match was found by decoding the span (base64).
	Encoded bool
}

// Options selects what Scan looks for.
type Options struct {
	// Kinds to report; nil means all.
	Kinds []Kind
	// DetectorUnavailable is set by Scan when the installed secret
	// detector could not run and only the built-in secret shapes were used.
	DetectorUnavailable *bool
}

func (o Options) wants(k Kind) bool {
	if o.Kinds == nil {
		return true
	}
	for _, x := range o.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// MaxScan bounds the text Scan reads; the rest is not scanned: callers
// must treat longer text as unscannable (the judge escalates it).
const MaxScan = 64 << 10

// Scan returns the findings in text, ordered by position, overlaps merged
// in favour of the earlier (then longer) match. Base64 runs that decode to
// text are scanned too; a finding inside one covers the whole run.
func Scan(text string, opt Options) []Finding {
	if len(text) > MaxScan {
		text = text[:MaxScan]
	}
	fs := scanPlain(text, opt)
	for _, loc := range b64Run().FindAllStringIndex(text, -1) {
		dec, ok := decodeB64(text[loc[0]:loc[1]])
		if !ok {
			continue
		}
		for _, f := range scanPlain(dec, opt) {
			fs = append(fs, Finding{Kind: f.Kind, Rule: "base64:" + f.Rule, Start: loc[0], End: loc[1], Encoded: true})
		}
	}
	return merge(fs)
}

func scanPlain(text string, opt Options) []Finding {
	var fs []Finding
	// cheap prefilters: most text has no @, few digits
	digits := 0
	for i := 0; i < len(text); i++ {
		if isDigit(text[i]) {
			digits++
		}
	}
	if opt.wants(Email) && strings.IndexByte(text, '@') >= 0 {
		fs = append(fs, emails(text)...)
	}
	if opt.wants(Phone) && digits >= 10 {
		fs = append(fs, phones(text)...)
	}
	if opt.wants(PaymentCard) && digits >= 13 {
		fs = append(fs, cards(text)...)
	}
	if opt.wants(IBAN) && digits >= 8 {
		fs = append(fs, ibans(text)...)
	}
	if opt.wants(NationalID) && digits >= 6 {
		fs = append(fs, nationalIDs(text)...)
	}
	if opt.wants(StreetAddress) && digits >= 1 {
		fs = append(fs, addresses(text)...)
	}
	if opt.wants(Secret) {
		fs = append(fs, secrets(text, opt.DetectorUnavailable)...)
	}
	return fs
}

func merge(fs []Finding) []Finding {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Start != fs[j].Start {
			return fs[i].Start < fs[j].Start
		}
		return fs[i].End > fs[j].End
	})
	var out []Finding
	for _, f := range fs {
		if n := len(out); n > 0 && f.Start < out[n-1].End {
			if f.End > out[n-1].End {
				out[n-1].End = f.End
			}
			continue
		}
		out = append(out, f)
	}
	return out
}

// Marker is the text a redacted finding of kind k is replaced with.
func Marker(k Kind) string { return "[redacted " + string(k) + "]" }

// Redact returns text with every finding replaced by its marker.
func Redact(text string, fs []Finding) string {
	var b strings.Builder
	last := 0
	for _, f := range merge(append([]Finding(nil), fs...)) {
		if f.Start < last || f.End > len(text) {
			continue
		}
		b.WriteString(text[last:f.Start])
		b.WriteString(Marker(f.Kind))
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// Kinds returns the distinct kinds of fs, in order of first appearance.
func Kinds(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		k := string(f.Kind)
		if f.Encoded {
			k += " (base64)"
		}
		dup := false
		for _, x := range out {
			dup = dup || x == k
		}
		if !dup {
			out = append(out, k)
		}
	}
	return out
}

// words is a set of strings held as a list literal: unlike a map
// literal, it costs nothing at start-up (every hook links this package).
type words []string

func (w words) has(s string) bool { return slices.Contains(w, s) }

func lazy(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// --- base64 ---------------------------------------------------------------

var b64Run = lazy(`[A-Za-z0-9+/_-]{20,}={0,2}`)

// decodeB64 decodes a run that is base64 of printable text.
func decodeB64(s string) (string, bool) {
	t := strings.TrimRight(s, "=")
	var raw []byte
	var err error
	if strings.ContainsAny(t, "-_") {
		raw, err = base64.RawURLEncoding.DecodeString(t)
	} else {
		raw, err = base64.RawStdEncoding.DecodeString(t)
	}
	if err != nil || len(raw) < 8 || !utf8.Valid(raw) {
		return "", false
	}
	printable := 0
	for _, r := range string(raw) {
		if r >= 0x20 && r < 0x7f || r == '\n' || r == '\t' || r >= 0xa0 {
			printable++
		}
	}
	if printable*10 < utf8.RuneCount(raw)*9 {
		return "", false
	}
	return string(raw), true
}

// --- email ----------------------------------------------------------------

var emailRe = lazy(`[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}`)

// ExampleDomain reports whether domain is reserved for documentation
// (RFC 2606, RFC 6761) or is a forge's public no-reply domain.
func ExampleDomain(domain string) bool {
	d := strings.ToLower(strings.TrimSuffix(domain, "."))
	for _, ex := range []string{"example.com", "example.net", "example.org", "users.noreply.github.com", "noreply.github.com"} {
		if d == ex || strings.HasSuffix(d, "."+ex) {
			return true
		}
	}
	for _, tld := range []string{".example", ".test", ".invalid", ".localhost", ".local"} {
		if strings.HasSuffix(d, tld) {
			return true
		}
	}
	return d == "localhost"
}

func emails(text string) []Finding {
	var fs []Finding
	for _, loc := range emailRe().FindAllStringIndex(text, -1) {
		s := text[loc[0]:loc[1]]
		at := strings.LastIndexByte(s, '@')
		local, domain := s[:at], s[at+1:]
		if ExampleDomain(domain) || strings.Contains(local, "..") {
			continue
		}
		// scp-like remotes (git@github.com:org/repo) and URL user info
		// name an account on a host, not a mailbox
		if loc[1] < len(text) && text[loc[1]] == ':' && (local == "git" || loc[1]+1 < len(text) && text[loc[1]+1] != ' ') {
			continue
		}
		if loc[0] >= 3 && text[loc[0]-3:loc[0]] == "://" {
			continue
		}
		fs = append(fs, Finding{Kind: Email, Rule: "email", Start: loc[0], End: loc[1]})
	}
	return fs
}

// --- phone ----------------------------------------------------------------

var (
	// +CC then groups: +44 20 7946 0958, +1-415-555-2671, +4915123456789
	phoneIntl = lazy(`\+[1-9][0-9]{0,2}(?:[ .-]?\(?[0-9]{1,5}\)?){1,6}`)
	// North American: (415) 555-2671, 415-555-2671, 415.555.2671
	phoneNANP = lazy(`(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[.-])[2-9][0-9]{2}[.-][0-9]{4}`)
)

func phones(text string) []Finding {
	var fs []Finding
	add := func(loc []int, rule string) {
		s, e := loc[0], loc[1]
		// not part of a longer token (versions, ids, hashes, dates)
		if s > 0 && isWordy(text[s-1]) || e < len(text) && (isWordy(text[e]) || text[e] == '.' && e+1 < len(text) && isDigit(text[e+1])) {
			return
		}
		if s > 0 && (text[s-1] == '.' || text[s-1] == '-' || text[s-1] == '/') {
			return
		}
		digits := onlyDigits(text[s:e])
		n := len(digits)
		if n < 10 || n > 15 {
			return
		}
		if fictitious(digits) {
			return
		}
		fs = append(fs, Finding{Kind: Phone, Rule: rule, Start: s, End: e})
	}
	for _, loc := range phoneIntl().FindAllStringIndex(text, -1) {
		add(loc, "phone_e164")
	}
	for _, loc := range phoneNANP().FindAllStringIndex(text, -1) {
		add(loc, "phone_nanp")
	}
	return fs
}

// fictitious reports numbers reserved for fiction and documentation:
// NANP 555-0100 through 555-0199 and the UK's 020 7946 0xxx drama range.
func fictitious(d string) bool {
	if strings.HasPrefix(d, "1") && len(d) == 11 {
		d = d[1:]
	}
	if len(d) == 10 && d[3:6] == "555" && d[6:8] == "01" {
		return true
	}
	return strings.HasPrefix(d, "4420794600") || strings.HasPrefix(d, "020794600")
}

// --- payment cards --------------------------------------------------------

var cardRe = lazy(`[0-9](?:[ -]?[0-9]){12,18}`)

// testCards are the numbers processors publish for test environments.
var testCards = words{
	"4111111111111111", "4242424242424242", "4000056655665556", "4012888888881881",
	"4222222222222", "5555555555554444", "5105105105105100", "5200828282828210",
	"2223003122003222", "378282246310005", "371449635398431", "378734493671000",
	"6011111111111117", "6011000990139424", "30569309025904", "38520000023237",
	"3530111333300000", "3566002020360505", "4000000000000002", "4000000000009995",
	"4000002500003155", "5431111111111111", "4005519200000004", "4444333322221111",
}

func cards(text string) []Finding {
	var fs []Finding
	for _, loc := range cardRe().FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if s > 0 && (isWordy(text[s-1]) || text[s-1] == '.') || e < len(text) && isWordy(text[e]) {
			continue
		}
		raw := text[s:e]
		// groups must be consistent: all one run, or separated by one kind
		if strings.Contains(raw, " ") && strings.Contains(raw, "-") {
			continue
		}
		d := onlyDigits(raw)
		if !luhn(d) || !cardPrefix(d) || testCards.has(d) {
			continue
		}
		fs = append(fs, Finding{Kind: PaymentCard, Rule: "payment_card_luhn", Start: s, End: e})
	}
	return fs
}

func luhn(d string) bool {
	sum, dbl := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		n := int(d[i] - '0')
		if dbl {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
		dbl = !dbl
	}
	return sum%10 == 0
}

// cardPrefix checks the issuer prefix and length of the major networks.
func cardPrefix(d string) bool {
	n := len(d)
	p2 := d[:2]
	switch {
	case d[0] == '4':
		return n == 13 || n == 16 || n == 19
	case p2 >= "51" && p2 <= "55", d[:4] >= "2221" && d[:4] <= "2720":
		return n == 16
	case p2 == "34" || p2 == "37":
		return n == 15
	case strings.HasPrefix(d, "6011") || p2 == "65" || d[:3] >= "644" && d[:3] <= "649":
		return n >= 16 && n <= 19
	case d[:4] >= "3528" && d[:4] <= "3589":
		return n >= 16 && n <= 19
	case p2 == "36" || p2 == "38" || p2 == "39" || d[:3] >= "300" && d[:3] <= "305":
		return n >= 14 && n <= 19
	case p2 == "62":
		return n >= 16 && n <= 19
	}
	return false
}

// --- IBAN -----------------------------------------------------------------

var ibanRe = lazy(`[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?`)

// ibanLen is the IBAN length of each country that issues them.
var ibanLen = sync.OnceValue(func() map[string]int {
	return map[string]int{
		"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
		"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
		"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
		"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
		"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
		"MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
		"RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
		"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
	}
})

// exampleIBANs are the examples banks and the IBAN registry publish.
var exampleIBANs = words{
	"GB82WEST12345698765432", "GB29NWBK60161331926819", "DE89370400440532013000",
	"FR1420041010050500013M02606", "NL91ABNA0417164300", "ES9121000418450200051332",
	"IT60X0542811101000000123456", "CH9300762011623852957", "BE68539007547034",
	"GB33BUKB20201555555555",
}

func ibans(text string) []Finding {
	var fs []Finding
	for _, loc := range ibanRe().FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if s > 0 && isWordy(text[s-1]) {
			continue
		}
		// the regexp may take a trailing group too many; try shorter ends
		for ; e > s+15; e-- {
			if e < len(text) && isWordy(text[e]) && e == loc[1] {
				break
			}
			compact := strings.ReplaceAll(text[s:e], " ", "")
			if n, ok := ibanLen()[compact[:2]]; ok && n == len(compact) && mod97(compact) && !exampleIBANs.has(compact) {
				fs = append(fs, Finding{Kind: IBAN, Rule: "iban_mod97", Start: s, End: e})
				break
			}
		}
	}
	return fs
}

func mod97(iban string) bool {
	r := iban[4:] + iban[:4]
	rem := 0
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// --- national ids ---------------------------------------------------------

var (
	ssnRe  = lazy(`[0-9]{3}[- ][0-9]{2}[- ][0-9]{4}`)
	ninoRe = lazy(`[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]`)
)

// voidedSSNs were printed in advertising and voided.
var voidedSSNs = words{"078051120", "219099999", "457555462"}

func nationalIDs(text string) []Finding {
	var fs []Finding
	for _, loc := range ssnRe().FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if s > 0 && (isWordy(text[s-1]) || text[s-1] == '-' || text[s-1] == '.') || e < len(text) && (isWordy(text[e]) || text[e] == '-') {
			continue
		}
		raw := text[s:e]
		if raw[3] != raw[6] { // one separator throughout
			continue
		}
		d := onlyDigits(raw)
		area, group, serial := d[:3], d[3:5], d[5:]
		if area == "000" || area == "666" || area >= "900" || group == "00" || serial == "0000" || voidedSSNs.has(d) {
			continue
		}
		fs = append(fs, Finding{Kind: NationalID, Rule: "us_ssn", Start: s, End: e})
	}
	for _, loc := range ninoRe().FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if s > 0 && isWordy(text[s-1]) || e < len(text) && isWordy(text[e]) {
			continue
		}
		switch text[s : s+2] {
		case "BG", "GB", "NK", "KN", "TN", "NT", "ZZ":
			continue
		}
		fs = append(fs, Finding{Kind: NationalID, Rule: "uk_nino", Start: s, End: e})
	}
	return fs
}

// --- street addresses -----------------------------------------------------

var addressRe = lazy(`\b[0-9]{1,5}[A-Za-z]? (?:[NSEW]\.? )?(?:[A-Z][a-z]*\.? ){1,4}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Terrace|Way|Parkway|Pkwy|Circle|Cir|Highway|Hwy|Square|Sq|Crescent|Close|Gardens|Strasse|Straße)\b\.?(?:,? (?:Apt|Suite|Unit|Flat) ?#?[0-9A-Za-z]+)?`)

// An address-shaped phrase counts only with what makes it one: a city
// after a comma, a unit, or a word before it that introduces a place
// ("lives at", "ship to", "address:"). "section 4 Review Court" does not.
var (
	addressBefore = lazy(`(?i)\b(?:at|to|address|addr|lives?|living|located|office|ship|deliver|mail|visit|resides?|home|house|from)\b[\s:,-]*$`)
	addressAfter  = lazy(`^,? (?:[A-Z][a-z]+|[A-Z]{2}\b)`)
)

func addresses(text string) []Finding {
	var fs []Finding
	for _, loc := range addressRe().FindAllStringIndex(text, -1) {
		s := text[loc[0]:loc[1]]
		before := text[max(0, loc[0]-24):loc[0]]
		unit := strings.Contains(s, ",")
		if !unit && !addressBefore().MatchString(before) && !(strings.HasPrefix(text[loc[1]:], ",") && addressAfter().MatchString(text[loc[1]:])) {
			continue
		}
		fs = append(fs, Finding{Kind: StreetAddress, Rule: "street_address", Start: loc[0], End: loc[1]})
	}
	return fs
}

// --- secrets --------------------------------------------------------------

// builtinSecret are token shapes that are secrets whatever surrounds them;
// they hold when no detector is installed.
var builtinSecret = lazy(`(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|sk_live_[A-Za-z0-9]{20,}|rk_live_[A-Za-z0-9]{20,}|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}|AIza[0-9A-Za-z_-]{35}|-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----|npm_[A-Za-z0-9]{36}|hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+`)

// credentialAssign is a password or key written out as a value.
var credentialAssign = lazy(`(?i)\b(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|client[_-]?secret)["']?\s*[:=]\s*["']?([^\s"'<>]{8,})`)

// placeholder reports a credential value that is a reference or a
// documentation stand-in, not a credential: $VAR, ${{ … }}, <…>,
// changeme, xxx…, your-…, example, redacted.
func placeholder(v string) bool {
	l := strings.ToLower(v)
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") || strings.HasPrefix(v, "{") || strings.Contains(l, "redacted") {
		return true
	}
	for _, w := range []string{"changeme", "example", "your", "xxxx", "****", "password", "placeholder", "secret", "dummy", "sample", "env(", "process.env", "os.getenv"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	// a credential mixes classes; a plain word (or a number) is prose
	lower, upper, digit, other := false, false, false, false
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		default:
			other = true
		}
	}
	classes := 0
	for _, b := range []bool{lower, upper, digit, other} {
		if b {
			classes++
		}
	}
	return classes < 2
}

// tokenRun is a candidate secret for span finding: a run of token
// characters long enough for any detector rule.
var tokenRun = lazy(`[A-Za-z0-9_+/=.~-]{12,}`)

func secrets(text string, unavailable *bool) []Finding {
	var fs []Finding
	for _, loc := range builtinSecret().FindAllStringIndex(text, -1) {
		if strings.Contains(text[loc[0]:loc[1]], "EXAMPLE") {
			continue // AKIAIOSFODNN7EXAMPLE and friends: documentation
		}
		fs = append(fs, Finding{Kind: Secret, Rule: "docket:token", Start: loc[0], End: loc[1]})
	}
	for _, m := range credentialAssign().FindAllStringSubmatchIndex(text, -1) {
		v := text[m[2]:m[3]]
		if placeholder(v) {
			continue
		}
		fs = append(fs, Finding{Kind: Secret, Rule: "docket:credential_assignment", Start: m[2], End: m[3]})
	}
	if strings.Contains(text, "://") {
		fs = append(fs, urlCredentials(text)...)
	}
	rule := firewall.Secret(text)
	if rule == "" {
		return fs
	}
	if rule == "detector-unavailable" {
		if unavailable != nil {
			*unavailable = true
		}
		return fs
	}
	// The detector says which rule, not where: find the runs whose own
	// context (the line up to and including the run) still trips it.
	found := false
	for _, loc := range tokenRun().FindAllStringIndex(text, -1) {
		ls := strings.LastIndexByte(text[:loc[0]], '\n') + 1
		if loc[0]-ls > 80 {
			ls = loc[0] - 80
		}
		if r := firewall.Secret(text[ls:loc[1]]); r != "" && r != "detector-unavailable" {
			fs = append(fs, Finding{Kind: Secret, Rule: r, Start: loc[0], End: loc[1]})
			found = true
		}
	}
	if !found {
		// a match we cannot place: the whole text is the span
		fs = append(fs, Finding{Kind: Secret, Rule: rule, Start: 0, End: len(text)})
	}
	return fs
}

// urlRun is a URL: a scheme, "://" and the characters a URL runs to.
var urlRun = lazy("(?i)\\b[a-z][a-z0-9+.-]*://[^\\s\"'<>`\\\\]+")

// awsKeyID and awsSecretKey are the two halves of an AWS access key pair.
var (
	awsKeyID     = lazy(`^(?:AKIA|ASIA)[0-9A-Z]{16}$`)
	awsSecretKey = lazy(`^[A-Za-z0-9/+]{40}$`)
)

// credentialParams are query parameter names (lower case, without _ - .)
// that carry a credential: API keys, access and auth tokens, passwords,
// client secrets. Paging and CSRF tokens are not among them.
var credentialParams = words{"apikey", "accesskey", "accesskeyid", "awsaccesskeyid", "secret", "secretkey", "secretaccesskey",
	"awssecretaccesskey", "token", "accesstoken", "authtoken", "apitoken", "privatetoken", "refreshtoken", "idtoken",
	"sessiontoken", "xamzsecuritytoken", "password", "passwd", "pwd", "clientsecret", "auth", "authorization",
	"credential", "credentials", "bearer", "jwt", "privatekey", "apisecret", "appsecret", "consumersecret", "signingkey"}

// urlCredentials finds credentials in the URLs of text: a URL's query
// string or fragment is data sent to its host, so a credential there
// leaves the machine with the request. It reports the value of a
// credential-named parameter (token=, api_key=, password=, …) that is
// not a placeholder, a value of one of the built-in token shapes, an
// AWS access key pair (a key id and a 40-character secret key in one
// URL, whatever the parameters are called and documentation marks or
// not: the pair is a credential handed over), and the password of a
// URL's user information (https://user:password@host).
func urlCredentials(text string) []Finding {
	var fs []Finding
	for _, loc := range urlRun().FindAllStringIndex(text, -1) {
		u := text[loc[0]:loc[1]]
		// user information: scheme://user:password@host
		if i := strings.Index(u, "://"); i >= 0 {
			auth := u[i+3:]
			if j := strings.IndexAny(auth, "/?#"); j >= 0 {
				auth = auth[:j]
			}
			if at := strings.LastIndexByte(auth, '@'); at >= 0 {
				if c := strings.IndexByte(auth[:at], ':'); c >= 0 && !placeholder(auth[c+1:at]) && len(auth[c+1:at]) >= 6 {
					// user and password: the finding starts before what
					// the address detector would read as a mailbox
					start := loc[0] + i + 3
					fs = append(fs, Finding{Kind: Secret, Rule: "docket:url_credential", Start: start, End: start + at})
				}
			}
		}
		q := strings.IndexAny(u, "?#")
		if q < 0 {
			continue
		}
		type param struct {
			start, end int // of the value in text
			val        string
		}
		var keyIDs, secretKeys []param
		off := loc[0] + q + 1
		for _, kv := range strings.FieldsFunc(u[q+1:], func(r rune) bool { return r == '&' || r == ';' || r == '#' || r == '?' }) {
			at := strings.Index(text[off:loc[1]], kv)
			if at < 0 {
				continue
			}
			kvStart := off + at
			off = kvStart + len(kv)
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "" {
				continue
			}
			vs := kvStart + len(k) + 1
			p := param{vs, vs + len(v), v}
			if dv, err := url.QueryUnescape(v); err == nil {
				p.val = dv
			}
			name := strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(k))
			if dk, err := url.QueryUnescape(name); err == nil {
				name = dk
			}
			switch {
			case builtinSecret().MatchString(p.val) && !strings.Contains(p.val, "EXAMPLE"):
				fs = append(fs, Finding{Kind: Secret, Rule: "docket:url_credential", Start: p.start, End: p.end})
			case credentialParams.has(name) && len(p.val) >= 8 && !placeholder(p.val):
				fs = append(fs, Finding{Kind: Secret, Rule: "docket:url_credential", Start: p.start, End: p.end})
			}
			switch {
			case awsKeyID().MatchString(p.val):
				keyIDs = append(keyIDs, p)
			case awsSecretKey().MatchString(p.val):
				secretKeys = append(secretKeys, p)
			}
		}
		if len(keyIDs) > 0 && len(secretKeys) > 0 {
			for _, p := range append(keyIDs, secretKeys...) {
				fs = append(fs, Finding{Kind: Secret, Rule: "docket:aws_key_pair", Start: p.start, End: p.end})
			}
		}
	}
	return fs
}

// --- helpers --------------------------------------------------------------

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordy(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func onlyDigits(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
