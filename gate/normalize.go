package gate

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalize returns the text the lexicon is matched against: NFKC
// (fullwidth forms, ligatures, compatibility digits and spaces), with
// invisible characters dropped (format characters such as zero-width
// spaces and joiners, bidi controls, soft hyphens and tag characters;
// combining marks left over after composition; variation selectors;
// Hangul fillers), look-alike Cyrillic, Greek and Armenian letters folded
// to the Latin letters they imitate (see foldConfusables), the ideographic full stop made a
// full stop, and a space put after sentence punctuation that CJK text
// runs on from. ASCII text is returned as is.
func normalize(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	s = norm.NFKC.String(s)
	rs := make([]rune, 0, len(s))
	for _, r := range s {
		if !invisible(r) {
			rs = append(rs, r)
		}
	}
	foldConfusables(rs)
	var b strings.Builder
	b.Grow(len(s))
	var prev rune
	for _, r := range rs {
		if r == '。' || r == '｡' {
			r = '.'
		}
		if isCJK(r) && strings.ContainsRune(".!?;", prev) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// foldConfusables folds look-alike letters to Latin in each word that
// imitates a Latin one: a word that mixes them with Latin letters
// ("dоne" with a Cyrillic o), or, in text with no word of their own
// script, one made of look-alikes only ("рассеԁ"). Cyrillic, Greek and
// Armenian text ("готово", "не", "тесты") is left as is, so the lexicon's
// patterns and negation cues for that language can match it.
func foldConfusables(rs []rune) {
	conf := confusables()
	foreign := false
	for _, r := range rs {
		if _, ok := conf[r]; !ok && unicode.In(r, unicode.Cyrillic, unicode.Greek, unicode.Armenian) {
			foreign = true
			break
		}
	}
	for i := 0; i < len(rs); {
		if !unicode.IsLetter(rs[i]) {
			i++
			continue
		}
		j, latin, own := i, false, false
		for ; j < len(rs) && unicode.IsLetter(rs[j]); j++ {
			if _, ok := conf[rs[j]]; ok {
				continue
			}
			if unicode.Is(unicode.Latin, rs[j]) {
				latin = true
			} else {
				own = true
			}
		}
		if latin || !own && !foreign {
			for k := i; k < j; k++ {
				if f, ok := conf[rs[k]]; ok {
					rs[k] = f
				}
			}
		}
		i = j
	}
}

func invisible(r rune) bool {
	switch {
	case r < 0x80:
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800: // Hangul fillers, blank braille
		return true
	}
	return false
}

func isCJK(r rune) bool {
	return r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r))
}

// confusables folds letters that render like Latin ones (after NFKC,
// which already folds fullwidth and mathematical alphanumerics). Built on
// first use: most text the gate reads has none.
var confusables = sync.OnceValue(func() map[rune]rune {
	return map[rune]rune{
		// Cyrillic
		'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't', 'у': 'y', 'х': 'x',
		'ѕ': 's', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ԁ': 'd', 'ӏ': 'l', 'һ': 'h', 'ԛ': 'q', 'ԝ': 'w', 'ү': 'y', 'ɡ': 'g', 'ь': 'b',
		'А': 'A', 'В': 'B', 'Е': 'E', 'Ё': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'У': 'Y', 'Х': 'X',
		'Ѕ': 'S', 'І': 'I', 'Ї': 'I', 'Ј': 'J', 'Ԁ': 'D', 'Ӏ': 'I', 'Һ': 'H', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ү': 'Y',
		// Greek
		'α': 'a', 'ο': 'o', 'ν': 'v', 'ρ': 'p', 'ι': 'i', 'κ': 'k', 'υ': 'u', 'χ': 'x', 'ε': 'e', 'τ': 't', 'ϲ': 'c', 'ϳ': 'j',
		'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X', 'Ϲ': 'C',
		// Armenian, Latin variants
		'օ': 'o', 'ս': 'u', 'ց': 'g', 'ı': 'i', 'ɑ': 'a', 'ɩ': 'i', 'ǀ': 'l', 'ʟ': 'L',
	}
})
