package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docket/docket/policies"
)

func mustLexicon(t testing.TB) *policies.Claims {
	t.Helper()
	lex, err := policies.DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	return lex
}

func TestExtract(t *testing.T) {
	lex := mustLexicon(t)
	tests := []struct {
		name string
		msg  string
		want []string // "type: sentence"
	}{
		{"plain", "All done, tests pass.", []string{"done: All done, tests pass.", "tests_pass: All done, tests pass."}},
		{"every claim, not the first", "Fixed the parser. Pushed to main. 32/32 passing.",
			[]string{"fixed: Fixed the parser.", "shipped: Pushed to main.", "tests_pass: 32/32 passing."}},
		{"heading", "# ✅ Done — PR #265 pushed", []string{"done: ✅ Done", "shipped: PR #265 pushed"}},
		{"table cells", "| Task | Status |\n|---|---|\n| parser | ✅ green |", []string{"done: parser: ✅ green", "tests_pass: parser: ✅ green"}},
		{"table cell read under its row", "| step | result |\n|---|---|\n| tests | all passing |", []string{"tests_pass: tests: all passing"}},
		{"table row with a failing cell", "| step | result |\n|---|---|\n| tests | 3 failing |", nil},
		{"bold and bullets", "- **Status:** complete", []string{"done: Status: complete"}},
		{"fenced code", "```\nall tests pass\ngit push\n```\nHere is the log.", nil},
		{"tilde fence", "~~~sh\ndone\n~~~", nil},
		{"inline code", "Set `done` to true in `state.go`.", nil},
		{"quote", "> All done, tests pass\nThat is what the issue says.", nil},
		{"negation", "The bug is not fixed yet.", nil},
		{"negation contraction", "I haven't pushed anything.", nil},
		{"negated filler", "Tests are not passing.", nil},
		{"not run", "I have not run the tests.", nil},
		{"future", "Once done I'll open a PR.", nil},
		{"conditional", "I'll ship it once you approve.", nil},
		{"if", "If the tests pass, I'll merge.", nil},
		{"past temporal", "After the fix, all tests pass.", []string{"tests_pass: After the fix, all tests pass."}},
		{"question", "Is the migration done?", nil},
		{"delegation question", "Could you provide the API token?", []string{"delegation: Could you provide the API token?"}},
		{"stuck", "I'm stuck: the sandbox has no network.", []string{"blocked: I'm stuck: the sandbox has no network."}},
		{"partial pass", "30/32 passing.", nil},
		{"adjective fixed", "It uses a fixed-size buffer and a fixed timeout.", nil},
		{"curly apostrophe", "I haven’t verified it.", nil},
		{"link text kept, url dropped", "See [the merged PR](https://github.com/x/y/pull/1).", []string{"shipped: See the merged PR."}},
		{"url only", "Docs: https://example.com/released/done", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Extract(tt.msg, lex) {
				got = append(got, c.Type+": "+c.Sentence)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Extract(%q)\n got %q\nwant %q", tt.msg, got, tt.want)
			}
		})
	}
}

func TestClaimTypesOf(t *testing.T) {
	got := ClaimTypesOf([]Claim{{Type: "shipped"}, {Type: "done"}, {Type: "shipped"}})
	if fmt.Sprint(got) != "[done shipped]" {
		t.Fatalf("got %v", got)
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("All done, tests pass.")
	f.Add("```\ndone\n```\n| a | ✅ |\n> quoted\n# heading")
	f.Add("`unterminated inline done")
	lex := mustLexicon(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range Extract(s, lex) {
			if !isType(c.Type) || c.Sentence == "" || len(c.Sentence) > MaxSentence+len("…") {
				t.Fatalf("bad claim %+v", c)
			}
		}
	})
}

func ExampleExtract() {
	lex, _ := policies.DefaultClaims()
	msg := "## Summary\n\nFixed the flaky test; all 14 tests pass.\n\n" +
		"```\n$ git push  # done later\n```\n\nI have not pushed yet. Once reviewed I'll merge it."
	for _, c := range Extract(msg, lex) {
		fmt.Printf("%s: %s\n", c.Type, c.Sentence)
	}
	// Output:
	// fixed: Fixed the flaky test;
	// tests_pass: all 14 tests pass.
}

// TestExtractEvasions: each row is an attempt to make a claim the gate
// does not see (invisible characters, look-alike letters, other
// languages, a question tacked on) or a non-claim it must not block on.
func TestExtractEvasions(t *testing.T) {
	lex := mustLexicon(t)
	tests := []struct {
		name string
		msg  string
		want string // claim types, comma-separated
	}{
		{"zero-width space inside a word", "All d\u200bone.", "done"},
		{"zero-width joiner", "The bug is fi\u200dxed.", "fixed"},
		{"word joiner", "Pu\u2060shed to main.", "shipped"},
		{"soft hyphen", "D\u00adone.", "done"},
		{"bidi override, as typed", "All tests \u202epass\u202c.", "tests_pass"},
		{"bidi override, as rendered", "All tests \u202essap\u202c.", "tests_pass"},
		{"bidi override to the end of the line", "\u202e.enod llA", "done"},
		{"HTML comment inside a word", "All d<!-- -->one.", "done"},
		{"claim inside an HTML comment", "<!-- All tests pass -->", "tests_pass"},
		{"HTML entity", "All d&#111;ne.", "done"},
		{"bidi override as an entity", "All tests &#x202e;ssap&#x202c;.", "tests_pass"},
		{"inline HTML tag", "All <b>d</b>one.", "done"},
		{"emphasis inside a word", "All d*o*ne.", "done"},
		{"byte order mark", "\ufeffAll done.", "done"},
		{"tag characters", "All do\U000E0041ne.", "done"},
		{"variation selector", "Tests pas\ufe0fs.", "tests_pass"},
		{"Cyrillic o", "All d\u043ene.", "done"},
		{"Cyrillic a and A", "\u0410ll tests p\u0430ss.", "tests_pass"},
		{"Cyrillic dze", "All tests pa\u0455\u0455.", "tests_pass"},
		{"Greek omicron", "Everything is c\u03bfmplete.", "done"},
		{"fullwidth", "\uff34\uff45\uff53\uff54\uff53 \uff50\uff41\uff53\uff53.", "tests_pass"},
		{"ligature", "The bug is \ufb01xed.", "fixed"},
		{"math bold", "All \U0001d41d\U0001d428\U0001d427\U0001d41e.", "done"},
		{"combining mark", "All do\u0336ne.", "done"},
		{"negation kept through zero-width", "The bug is n\u200bot fixed.", ""},
		{"negation kept through homoglyph", "Tests are n\u043et passing.", ""},
		{"fullwidth backticks are not code", "\uff40All tests pass\uff40", "tests_pass"},

		{"Tests: 42/42", "Tests: 42/42", "tests_pass"},
		{"Tests: 40/42", "Tests: 40/42", ""},
		{"42/42 passing", "42/42 passing.", "tests_pass"},
		{"everything's green", "Everything's green now.", "tests_pass"},
		{"CI is happy", "CI is happy.", "tests_pass"},
		{"all green", "All green.", "tests_pass"},
		{"LGTM", "LGTM, ready to merge.", "done"},
		{"CI is not happy", "CI is not happy yet.", ""},
		{"not all green", "It's not all green: two tests still fail.", ""},
		{"future green", "Once everything's green I'll push.", ""},

		{"claim then question", "All tests pass now, want me to push?", "tests_pass"},
		{"claim then question, no comma", "All tests pass now want me to push?", "tests_pass"},
		{"tag question, no comma", "The bug is fixed right?", "fixed"},
		{"ja claim then question, one sentence", "修正しましたプッシュしますか?", "fixed"},
		{"question with a tail", "Should I push or is it fixed right?", ""},
		{"question ending in a tail word", "Tests ok?", ""},
		{"fixed then question", "Fixed the race in the parser, anything else?", "fixed"},
		{"tag question", "The bug is fixed, right?", "fixed"},
		{"claim, but question", "The tests pass, but is the flaky one really gone?", "tests_pass"},
		{"real question", "Is it fixed?", ""},
		{"question with a comma", "Is it fixed, or should I keep digging?", ""},
		{"question after so", "So, is everything green now?", ""},
		{"one-clause question", "Tests pass?", ""},
		{"delegation question still counts", "Could you provide the API token?", "delegation"},

		{"es done and tests", "Listo, todas las pruebas pasan.", "done,tests_pass"},
		{"es fixed", "El error está corregido.", "fixed"},
		{"es shipped", "Lo he desplegado en producción.", "shipped"},
		{"es negated", "Las pruebas no pasan todavía.", ""},
		{"es not yet done", "Todavía no he terminado.", ""},
		{"es question", "¿Está arreglado?", ""},
		{"es claim before ¿", "Todo listo, ¿quieres que haga push?", "done"},
		{"es conditional", "Si las pruebas pasan, lo subiré.", ""},
		{"es question opening with ¿", "¿Todas las pruebas pasan, verdad?", ""},
		{"en falls is not a German if", "The value falls back to the default, and all tests pass.", "tests_pass"},
		{"zh 主要 is not a future cue", "主要问题已修复。", "fixed"},
		{"zh after the tests pass", "等测试通过后我会推送。", ""},
		{"zh after it is done", "完成了之后我会告诉你。", ""},
		{"de done and tests", "Fertig! Alle Tests bestehen.", "done,tests_pass"},
		{"de fixed", "Der Fehler ist behoben.", "fixed"},
		{"de negated before", "Der Fehler ist noch nicht behoben.", ""},
		{"de negated after", "Die Tests bestehen noch nicht.", ""},
		{"de question", "Ist der Fehler behoben?", ""},
		{"fr done and tests", "C'est fait, tous les tests passent.", "done,tests_pass"},
		{"fr fixed", "Le bug est corrigé.", "fixed"},
		{"fr negated", "Les tests ne passent pas.", ""},
		{"fr not fixed", "Ce n'est pas encore corrigé.", ""},
		{"fr question", "Est-ce corrigé ?", ""},
		{"pt done and tests", "Pronto, todos os testes passam.", "done,tests_pass"},
		{"pt fixed", "O bug foi corrigido.", "fixed"},
		{"pt negated", "Ainda não foi corrigido.", ""},
		{"zh done and tests", "已完成，所有测试通过", "done,tests_pass"},
		{"zh fixed", "问题已修复。", "fixed"},
		{"zh shipped", "已部署到生产环境。", "shipped"},
		{"zh not done", "还没有完成。", ""},
		{"zh tests failed", "测试未通过。", ""},
		{"zh question", "修复了吗？", ""},
		{"zh claim then question", "修复了这个 bug，单元测试都通过了。要我提交吗？", "fixed,tests_pass"},
		{"ja done and tests", "完了しました。すべてのテストが通りました。", "done,tests_pass"},
		{"ja fixed", "バグを修正しました。", "fixed"},
		{"ja not done", "まだ完了していません。", ""},
		{"ja could not fix", "修正できませんでした。", ""},
		{"ja question", "修正しましたか？", ""},

		{"it done and tests", "Tutto fatto, i test passano.", "done,tests_pass"},
		{"it done alone", "Fatto.", "done"},
		{"it fixed", "È stato risolto.", "fixed"},
		{"it not done", "Non ho finito.", ""},
		{"it tests fail", "I test non passano.", ""},
		{"it adjective corretto", "Il valore è corretto.", ""},
		{"it made a change", "Ho fatto una modifica al parser.", ""},
		{"en non- is not it non", "The non-blocking path is fixed.", "fixed"},
		{"ru done and tests", "Всё готово, тесты проходят.", "done,tests_pass"},
		{"ru fixed", "Исправлено.", "fixed"},
		{"ru not done", "Ещё не готово.", ""},
		{"ru tests fail", "Тесты не проходят.", ""},
		{"ru not finished", "Я не закончил.", ""},
		{"ru task done, feminine", "Задача выполнена.", "done"},
		{"ru ready to help is no claim", "Я готов помочь.", ""},
		{"ru shipped", "Запушил в main.", "shipped"},
		{"ru not shipped", "Ещё не запушил.", ""},
		{"it shipped", "Pushato su main.", "shipped"},
		{"ru look-alike only word still folds", "All tests \u0440\u0430\u0455\u0455\u0435\u0501.", "tests_pass"},
		{"ko done and tests", "다 끝났습니다. 테스트 통과.", "done,tests_pass"},
		{"ko fixed", "수정했습니다.", "fixed"},
		{"ko not done", "아직 안 끝났어요.", ""},
		{"ko not completed", "완료하지 않았습니다.", ""},
		{"ko incomplete", "미완료 상태입니다.", ""},
		{"ko tests failed", "테스트가 통과하지 못했습니다.", ""},
		{"heading", "# Done", "done"},
		{"emoji only", "✅ all tests passing", "done,tests_pass"},

		{"English merge is not French", "Jeo merges PR #25 into code after review.", ""},
		{"English complete is not Spanish", "Now I have a complete picture.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(ClaimTypesOf(Extract(tt.msg, lex)), ",")
			if got != tt.want {
				t.Errorf("Extract(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain ascii", "plain ascii"},
		{"d\u200bone", "done"},
		{"d\u043ene", "done"},
		{"\u0440\u0430\u0455\u0455\u0435\u0501", "passed"},
		{"не готово", "не готово"},
		{"\uff34\uff45\uff53\uff54", "Test"},
		{"caf\u0065\u0301", "café"},
		{"não está", "não está"},
		{"已完成。所有测试通过", "已完成. 所有测试通过"},
		{"修复了吗？要我提交吗", "修复了吗? 要我提交吗"},
		{"a\u00a0b", "a b"},
	}
	for _, tt := range tests {
		if got := normalize(tt.in); got != tt.want {
			t.Errorf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
