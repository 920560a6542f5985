package registry_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/toolbind"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/registry"
)

// corpus returns a registry of testdata/corpus: 37 realistic manifests
// (billing, CRM, support, orders, shipping, calendar, mail, files, GitHub,
// ops), contract-only.
func corpus(t testing.TB) *registry.Registry {
	t.Helper()
	return loadRegistry(t, "testdata/corpus")
}

// loadRegistry returns a registry of the manifests in dir, contract-only.
func loadRegistry(t testing.TB, dir string) *registry.Registry {
	t.Helper()
	specs, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return registryOf(t, specs...)
}

func names(ms []registry.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Tool.Name()
	}
	return out
}

// The expected results below were written from the manifests alone, before
// the ranking existed, as a person would answer each query; the ranking was
// then made to meet them, not the other way round.
func TestSearchRanksTheToolAPersonWouldPick(t *testing.T) {
	t.Parallel()
	r := corpus(t)
	for _, tc := range []struct {
		query string
		// top are the tools expected in the first len(top) results, in any order.
		top []string
	}{
		{"refund a payment", []string{"refund_payment"}},
		{"give the customer their money back", []string{"refund_payment"}},
		{"where is my package", []string{"track_shipment"}},
		{"schedule a meeting", []string{"create_calendar_event"}},
		{"send an email", []string{"send_email"}},
		{"open a support ticket", []string{"create_ticket"}},
		{"stock level of a product", []string{"check_inventory", "adjust_inventory"}},
		{"invoices", []string{"list_invoices", "create_invoice"}},
		{"cancel subscription", []string{"cancel_subscription"}},
		{"exchange rate from usd to eur", []string{"convert_currency"}},
		{"pull requests", []string{"list_pull_requests"}},
		{"query the database", []string{"run_sql_query"}},
		{"slack", []string{"post_slack_message"}},
		{"weather forecast", []string{"get_weather"}},
		{"tracking_number", []string{"track_shipment"}},
		{"lookup_order", []string{"lookup_order"}},
		{"service logs", []string{"get_service_logs"}},
		{"translate into French", []string{"translate_text"}},
		{"when are they free (busy calendars)", []string{"find_free_time"}},
		{"reply to a ticket", []string{"add_ticket_comment"}},
		{"helpdesk", []string{"create_ticket", "close_ticket", "list_open_tickets"}},
		{"Refunds", []string{"refund_payment"}},
		{"unsubscribe", []string{"cancel_subscription"}},
		{"upgradePlan", []string{"update_subscription"}},
		// A second batch, written (like the first) before it was run.
		{"bug report on github", []string{"create_github_issue"}},
		{"reboot the api server", []string{"restart_service"}},
		{"how many units in stock", []string{"check_inventory"}},
		{"change the email on a profile", []string{"update_customer_email"}},
		{"postage for a parcel", []string{"create_shipping_label"}},
		{"upcoming agenda", []string{"list_calendar_events"}},
		{"charge the customer's credit card", []string{"charge_card"}},
		{"find a document in the drive", []string{"search_files"}},
		{"google something", []string{"web_search"}},
		{"account balance", []string{"get_balance"}},
		{"internal note on a ticket", []string{"add_ticket_comment"}},
		{"SQL", []string{"run_sql_query"}},
		{"close the case", []string{"close_ticket"}},
		{"fx", []string{"convert_currency"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			got := names(r.Search(registry.Query{Text: tc.query, Limit: 5}))
			if len(got) < len(tc.top) {
				t.Fatalf("Search(%q) = %v, want %v first", tc.query, got, tc.top)
			}
			head := slices.Clone(got[:len(tc.top)])
			want := slices.Clone(tc.top)
			slices.Sort(head)
			slices.Sort(want)
			if !slices.Equal(head, want) {
				t.Errorf("Search(%q) = %v, want %v first", tc.query, got, tc.top)
			}
		})
	}
}

func TestSearchScoresFallAndAreAllPositive(t *testing.T) {
	t.Parallel()
	ms := corpus(t).Search(registry.Query{Text: "customer payment", Limit: 50})
	if len(ms) < 5 {
		t.Fatalf("Search = %v, want several matches", names(ms))
	}
	for i, m := range ms {
		if m.Score <= 0 {
			t.Errorf("match %d (%s) has score %v, want > 0", i, m.Tool.Name(), m.Score)
		}
		if i > 0 && m.Score > ms[i-1].Score {
			t.Errorf("match %d (%s, %v) scores above match %d (%s, %v)", i, m.Tool.Name(), m.Score, i-1, ms[i-1].Tool.Name(), ms[i-1].Score)
		}
	}
}

func TestSearchMatchingNothingGivesNoMatches(t *testing.T) {
	t.Parallel()
	r := corpus(t)
	// kubernetesxy is two edits from kubernetes: one is tolerated, not two.
	for _, q := range []string{"zqxjv", "kubernetesxy", "\x00\xff", "the of a", "!!!", "what is it"} {
		if got := r.Search(registry.Query{Text: q}); len(got) != 0 {
			t.Errorf("Search(%q) = %v, want none", q, names(got))
		}
	}
}

func TestSearchFilters(t *testing.T) {
	t.Parallel()
	r := corpus(t)
	t.Run("read-only keeps only tools without side effects", func(t *testing.T) {
		t.Parallel()
		ms := r.Search(registry.Query{Text: "ticket", ReadOnly: true, Limit: 50})
		if got := names(ms); len(got) == 0 || got[0] != "list_open_tickets" {
			t.Errorf("read-only Search(ticket) = %v, want list_open_tickets first", got)
		}
		for _, m := range ms {
			if m.Tool.SideEffect() {
				t.Errorf("read-only Search(ticket) matched %s, which has side effects", m.Tool.Name())
			}
		}
	})
	t.Run("a tag keeps only tools that carry it", func(t *testing.T) {
		t.Parallel()
		ms := r.Search(registry.Query{Text: "customer", Tags: []string{"billing"}, Limit: 50})
		if len(ms) == 0 {
			t.Fatal("no billing tool matches customer")
		}
		for _, m := range ms {
			if !slices.Contains(m.Tool.Spec().Tags, "billing") {
				t.Errorf("%s matched but has tags %v", m.Tool.Name(), m.Tool.Spec().Tags)
			}
		}
		if slices.Contains(names(ms), "lookup_customer") {
			t.Errorf("lookup_customer (tag crm) matched the billing filter")
		}
	})
	t.Run("several tags keep only tools that carry every one", func(t *testing.T) {
		t.Parallel()
		got := names(r.Search(registry.Query{Tags: []string{"billing", "payments"}, Limit: 50}))
		if want := []string{"refund_payment", "charge_card"}; !slices.Equal(got, want) {
			t.Errorf("Search(tags billing+payments) = %v, want %v", got, want)
		}
	})
	t.Run("an unknown tag matches nothing", func(t *testing.T) {
		t.Parallel()
		if got := r.Search(registry.Query{Text: "customer", Tags: []string{"nope"}}); len(got) != 0 {
			t.Errorf("Search with tag nope = %v, want none", names(got))
		}
	})
	t.Run("limit caps the matches and keeps the best", func(t *testing.T) {
		t.Parallel()
		all := names(r.Search(registry.Query{Text: "customer", Limit: 50}))
		two := names(r.Search(registry.Query{Text: "customer", Limit: 2}))
		if len(all) <= 2 || !slices.Equal(two, all[:2]) {
			t.Errorf("limit 2 gave %v; unlimited gave %v", two, all)
		}
	})
	t.Run("no limit means the default", func(t *testing.T) {
		t.Parallel()
		got := r.Search(registry.Query{})
		if len(got) != registry.DefaultSearchLimit {
			t.Errorf("Search with no limit gave %d, want DefaultSearchLimit (%d)", len(got), registry.DefaultSearchLimit)
		}
	})
	t.Run("blank text lists the filtered tools in registration order", func(t *testing.T) {
		t.Parallel()
		got := names(r.Search(registry.Query{Text: " \t ", Tags: []string{"calendar"}}))
		want := []string{"create_calendar_event", "list_calendar_events", "find_free_time"}
		if !slices.Equal(got, want) {
			t.Errorf("Search(no words, tag calendar) = %v, want %v", got, want)
		}
	})
}

// Tools whose indexed text differs only in their names score the same; they
// come in registration order, every time.
func TestSearchTiesComeInRegistrationOrder(t *testing.T) {
	t.Parallel()
	r := registry.New()
	var want []string
	for _, n := range []string{"zeta", "alpha", "mid", "beta", "omega", "gamma"} {
		name := "tool_" + n
		want = append(want, name)
		spec := &toolreg.Spec{Name: name, Description: "Fetch the weather report."}
		if err := r.Register(toolreg.NewTool(spec)); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		ms := r.Search(registry.Query{Text: "weather report", Limit: 10})
		if got := names(ms); !slices.Equal(got, want) {
			t.Fatalf("Search = %v, want registration order %v", got, want)
		}
		for _, m := range ms[1:] {
			if m.Score != ms[0].Score {
				t.Fatalf("scores %v and %v differ for equal text", ms[0].Score, m.Score)
			}
		}
	}
}

// A tool registered after the first search is found by the next one: the
// index follows the registry.
func TestSearchSeesToolsRegisteredAfterTheFirstSearch(t *testing.T) {
	t.Parallel()
	r := corpus(t)
	// A made-up word, so that WordNet relates it to nothing.
	if got := r.Search(registry.Query{Text: "zorblax"}); len(got) != 0 {
		t.Fatalf("zorblax found %v before any zorblax tool", names(got))
	}
	spec := &toolreg.Spec{Name: "daily_zorblax", Description: "Read today's zorblax for a star sign."}
	if err := r.Register(toolreg.NewTool(spec)); err != nil {
		t.Fatal(err)
	}
	if got := names(r.Search(registry.Query{Text: "zorblax"})); !slices.Equal(got, []string{"daily_zorblax"}) {
		t.Errorf("Search(zorblax) after Register = %v, want [daily_zorblax]", got)
	}
}

// Searches run concurrently with one another (go test -race).
func TestSearchIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	r := corpus(t)
	want := names(r.Search(registry.Query{Text: "refund a payment"}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := names(r.Search(registry.Query{Text: "refund a payment"})); !slices.Equal(got, want) {
					t.Errorf("concurrent Search = %v, want %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Param names, param descriptions, nested properties, tags and keywords are
// all searched, not only names and descriptions.
func TestSearchMatchesEveryIndexedField(t *testing.T) {
	t.Parallel()
	spec := func(name string, edit func(*toolreg.Spec)) *toolreg.Spec {
		s := &toolreg.Spec{Name: name, Description: "Do a thing."}
		edit(s)
		return s
	}
	r := registry.New()
	for _, s := range []*toolreg.Spec{
		spec("by_param_name", func(s *toolreg.Spec) {
			s.Params = []*toolreg.Param{{Name: "quasarId", Schema: toolreg.Schema{Type: toolreg.TypeString}}}
		}),
		spec("by_param_description", func(s *toolreg.Spec) {
			s.Params = []*toolreg.Param{{Name: "x", Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "The nebula to look at."}}}
		}),
		spec("by_property", func(s *toolreg.Spec) {
			s.Params = []*toolreg.Param{{Name: "x", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{
				Type: toolreg.TypeObject, Properties: []*toolreg.Param{{Name: "pulsar", Schema: toolreg.Schema{Type: toolreg.TypeString}}}}}}}
		}),
		spec("by_tag", func(s *toolreg.Spec) { s.Tags = []string{"comet"} }),
		spec("by_keyword", func(s *toolreg.Spec) { s.Keywords = []string{"supernova"} }),
		spec("by_title", func(s *toolreg.Spec) { s.Annotations = &toolreg.Annotations{Title: "Meteor shower"} }),
	} {
		if err := r.Register(toolreg.NewTool(s)); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]string{
		"quasar": "by_param_name", "nebula": "by_param_description", "pulsar": "by_property",
		"comet": "by_tag", "supernova": "by_keyword", "meteor": "by_title",
	} {
		if got := names(r.Search(registry.Query{Text: q})); !slices.Equal(got, []string{want}) {
			t.Errorf("Search(%q) = %v, want [%s]", q, got, want)
		}
	}
}

// A hostile query (megabytes of words) costs a bounded amount of work and
// still answers.
func TestSearchBoundsAHugeQuery(t *testing.T) {
	t.Parallel()
	r := corpus(t)
	q := strings.Repeat("refund payment customer zzz ", 200_000)
	got := r.Search(registry.Query{Text: q, Limit: 3})
	if len(got) == 0 || got[0].Tool.Name() != "refund_payment" {
		t.Errorf("Search(huge) = %v, want refund_payment first", names(got))
	}
}

func TestSearchOfAnEmptyRegistry(t *testing.T) {
	t.Parallel()
	if got := registry.New().Search(registry.Query{Text: "anything"}); len(got) != 0 {
		t.Errorf("Search of an empty registry = %v", names(got))
	}
}

func ExampleRegistry_Search() {
	specs, err := loader.Load("testdata/corpus")
	if err != nil {
		panic(err)
	}
	r := registry.New()
	for _, s := range specs {
		_ = r.Register(toolreg.NewTool(s))
	}
	for _, m := range r.Search(registry.Query{Text: "where is my parcel?", Limit: 3}) {
		fmt.Println(m.Tool.Name(), m.Tool.SideEffect())
	}
	// Only the tools a pipeline runs inline:
	for _, m := range r.Search(registry.Query{Text: "where is my parcel?", ReadOnly: true, Limit: 3}) {
		fmt.Println(m.Tool.Name(), m.Tool.SideEffect())
	}
	// Output:
	// track_shipment false
	// create_shipping_label true
	// track_shipment false
}

func registryOf(t testing.TB, specs ...*toolreg.Spec) *registry.Registry {
	t.Helper()
	tools := make([]*toolreg.Tool, len(specs))
	for i, s := range specs {
		tools[i] = toolreg.NewTool(s)
	}
	return registryOfTools(t, tools...)
}

// registryOfTools registers tools in a new registry, failing t on a refusal.
func registryOfTools(t testing.TB, tools ...*toolreg.Tool) *registry.Registry {
	t.Helper()
	r := registry.New()
	for _, tool := range tools {
		if err := r.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// Word forms meet through Snowball stemming: remind, reminders, reminding.
func TestSearchMatchesWordForms(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "create_reminder", Description: "Create a reminder at a given time."},
		&toolreg.Spec{Name: "list_files", Description: "List the files of a folder."})
	for _, q := range []string{"remind me at 6", "reminders", "reminding"} {
		if got := names(r.Search(registry.Query{Text: q})); len(got) == 0 || got[0] != "create_reminder" {
			t.Errorf("Search(%q) = %v, want create_reminder first", q, got)
		}
	}
}

// Text is matched whatever its Unicode form: a word written with a
// combining mark (as macOS and some clients send "naïve": i then U+0308)
// meets the same word precomposed, and is one word, not two split at the
// mark; fullwidth letters meet their ASCII. Both sides are compared in
// NFKC, and a mark is part of its word (as a vowel sign is in Devanagari).
func TestSearchMatchesTextWhateverItsUnicodeForm(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "classify_text", Description: "Nai\u0308ve Bayes classifier for short texts."},
		&toolreg.Spec{Name: "get_forecast", Description: "Weather forecast for a city."},
		&toolreg.Spec{Name: "read_cafe_menu", Description: "Read the menu of a café near you."})
	for q, want := range map[string][]string{
		"naïve":      {"classify_text"},  // precomposed query, decomposed tool
		"cafe\u0301": {"read_cafe_menu"}, // decomposed query, precomposed tool
		"ＷＥＡＴＨＥＲ":    {"get_forecast"},   // fullwidth
		"nai":        nil,                // no word of the tool: "naïve" is one word
	} {
		if got := names(r.Search(registry.Query{Text: q})); !slices.Equal(got, want) {
			t.Errorf("Search(%q) = %v, want %v", q, got, want)
		}
	}
}

// One typo is tolerated in a word of five letters or more, not two, and not
// in a shorter word, where one edit makes another word too often.
func TestSearchToleratesOneTypoInALongWord(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "create_event", Description: "Create a calendar event."},
		&toolreg.Spec{Name: "get_cat", Description: "Get a cat picture."})
	for q, want := range map[string][]string{
		"calender":  {"create_event"}, // replaced
		"calendr":   {"create_event"}, // deleted
		"calendaar": {"create_event"}, // inserted
		"calnedar":  {"create_event"}, // swapped
		"caelnder":  nil,              // two edits
		"car":       nil,              // one edit from cat, but short
	} {
		if got := names(r.Search(registry.Query{Text: q})); !slices.Equal(got, want) {
			t.Errorf("Search(%q) = %v, want %v", q, got, want)
		}
	}
}

// A common English word is what the person meant, not a typo: "contract"
// does not find a tool about contacts, one edit away. A misspelling, or a
// word too rare for WordNet's tagged corpus (calender, a machine), is still
// forgiven.
func TestSearchTakesNoCommonWordForATypo(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "update_contact", Description: "Update fields on a CRM contact."},
		&toolreg.Spec{Name: "create_event", Description: "Create a calendar event."})
	for q, want := range map[string][]string{
		"contract":            nil,
		"the signed contract": nil,
		"conatct":             {"update_contact"},
		"contacs":             {"update_contact"},
		"calender":            {"create_event"},
	} {
		if got := names(r.Search(registry.Query{Text: q})); !slices.Equal(got, want) {
			t.Errorf("Search(%q) = %v, want %v", q, got, want)
		}
	}
}

// A query word reaches a tool through its neighbours in GloVe's vectors:
// forecast finds a weather tool that has none of its synonyms or hypernyms,
// far below a tool that has the word itself. The words of the definition of
// its first sense ("a prediction about how something (as the weather) will
// develop") count as evidence only: they raise a tool matched another way,
// and alone match nothing.
func TestSearchReachesAToolThroughANeighbourAndADefinitionAddsEvidence(t *testing.T) {
	t.Parallel()
	conditions := &toolreg.Spec{Name: "get_conditions", Description: "Current weather for a city."}
	alone := registryOf(t, conditions, &toolreg.Spec{Name: "book_hotel", Description: "Book a hotel room."})
	if got := names(alone.Search(registry.Query{Text: "forecast"})); !slices.Equal(got, []string{"get_conditions"}) {
		t.Fatalf("Search(forecast) = %v, want [get_conditions]", got)
	}
	both := registryOf(t, conditions, &toolreg.Spec{Name: "get_outlook", Description: "The forecast for a city."})
	ms := both.Search(registry.Query{Text: "forecast"})
	if len(ms) == 0 || ms[0].Tool.Name() != "get_outlook" {
		t.Fatalf("Search(forecast) = %v, want get_outlook first", names(ms))
	}
	for _, m := range ms[1:] {
		if m.Score >= ms[0].Score/2 {
			t.Errorf("%s, by a neighbour, scores %v; get_outlook, by the word, %v: want it well below", m.Tool.Name(), m.Score, ms[0].Score)
		}
	}
	develop := &toolreg.Spec{Name: "build_app", Description: "Develop an app."}
	if got := names(registryOf(t, develop).Search(registry.Query{Text: "forecast"})); len(got) != 0 {
		t.Errorf("Search(forecast) = %v over a tool matching only a word of its definition, want nothing", got)
	}
	evidence := registryOf(t, conditions, &toolreg.Spec{Name: "weather_app", Description: "Develop a weather app."})
	if ms := evidence.Search(registry.Query{Text: "forecast"}); len(ms) != 2 || ms[0].Tool.Name() != "weather_app" || ms[1].Score >= ms[0].Score {
		t.Errorf("Search(forecast) = %v; want weather_app (weather and develop) above get_conditions (weather)", names(ms))
	}
}

// WordNet relates the words people write to the ones tools are described
// with, but the person's own words count more: a tool that has them
// outranks one that has only a related word.
func TestSearchExpandsWithWordNetBelowThePersonsWords(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "get_forecast", Description: "Get the weather forecast for a city."},
		&toolreg.Spec{Name: "book_hotel", Description: "Book a hotel room."},
		&toolreg.Spec{Name: "reserve_table", Description: "Reserve a table at a restaurant."})
	if got := names(r.Search(registry.Query{Text: "will it rain in Lisbon tomorrow"})); len(got) == 0 || got[0] != "get_forecast" {
		t.Errorf("Search(rain) = %v, want get_forecast (rain: precipitation: weather) first", got)
	}
	// agenda is a synonym of schedule: found when nothing has the word,
	// far below a tool that has it.
	agenda := &toolreg.Spec{Name: "show_agenda", Description: "Show the agenda of a day."}
	alone := registryOf(t, agenda)
	if got := names(alone.Search(registry.Query{Text: "my schedule"})); !slices.Equal(got, []string{"show_agenda"}) {
		t.Fatalf("Search(my schedule) with show_agenda alone = %v, want [show_agenda]", got)
	}
	both := registryOf(t, agenda, &toolreg.Spec{Name: "schedule_post", Description: "Schedule a post."})
	ms := both.Search(registry.Query{Text: "my schedule"})
	if len(ms) == 0 || ms[0].Tool.Name() != "schedule_post" {
		t.Fatalf("Search(my schedule) = %v, want schedule_post first", names(ms))
	}
	for _, m := range ms[1:] {
		if m.Score >= ms[0].Score/2 {
			t.Errorf("%s, by a synonym, scores %v; reserve_table, by the word, %v: want it well below", m.Tool.Name(), m.Score, ms[0].Score)
		}
	}
}

// A tool that matches a query word only through a distant relation (support
// is two hypernyms above order) gets little credit for covering that word:
// the ticket tool, with "status" in its description and the tag "support",
// does not outrank the order tool, "order" in its name, for "status of
// order 88123" by seeming to answer both words.
func TestSearchCreditsAWordByHowCloselyItMatched(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "list_tickets", Description: "List tickets by status or assignee.", Tags: []string{"support"}},
		&toolreg.Spec{Name: "get_order", Description: "Look up an order by its number."},
		&toolreg.Spec{Name: "send_email", Description: "Send an email."},
		&toolreg.Spec{Name: "play_track", Description: "Play a song."},
		&toolreg.Spec{Name: "book_hotel", Description: "Book a hotel room."})
	if got := names(r.Search(registry.Query{Text: "what's the status of order 88123"})); len(got) == 0 || got[0] != "get_order" {
		t.Errorf("Search(status of order) = %v, want get_order first", got)
	}
}

// A tool's params do not dilute the words of its name and description: two
// tools described alike rank alike for those words, however many params one
// takes (when one length counted both, the one with more params ranked
// lower).
func TestSearchParamsDoNotDiluteTheDescription(t *testing.T) {
	t.Parallel()
	many := &toolreg.Spec{Name: "invoice_one", Description: "Fetch an invoice."}
	for _, p := range strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november") {
		many.Params = append(many.Params, &toolreg.Param{Name: p, Schema: toolreg.Schema{Type: toolreg.TypeString, Description: "The " + p + " setting of the request."}})
	}
	few := &toolreg.Spec{Name: "invoice_two", Description: "Fetch an invoice."}
	r := registryOf(t, many, few, &toolreg.Spec{Name: "send_email", Description: "Send an email."})
	ms := r.Search(registry.Query{Text: "fetch an invoice"})
	if len(ms) < 2 || ms[0].Tool.Name() != "invoice_one" || ms[0].Score != ms[1].Score {
		t.Fatalf("Search(fetch an invoice) = %v: want invoice_one and invoice_two scored alike, in registration order", matchesString(ms))
	}
}

// matchesString shows matches with their scores, for a failure message.
func matchesString(ms []registry.Match) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %.4g; ", m.Tool.Name(), m.Score)
	}
	return b.String()
}

// A term that is one of the query's words and also related to another
// (content: the word "contents", and a hypernym of "example") answers the
// other only as a relation does: a tool with "content" does not seem to
// answer "example" fully.
func TestSearchCreditsATermForEachWordByItsRelationToIt(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "fetch_url", Description: "Fetch a URL and return its text content."},
		&toolreg.Spec{Name: "show_example", Description: "Show a sample request."},
		&toolreg.Spec{Name: "send_email", Description: "Send an email."},
		&toolreg.Spec{Name: "play_track", Description: "Play a song."})
	ms := r.Search(registry.Query{Text: "contents of the example"})
	if len(ms) == 0 || ms[0].Tool.Name() != "show_example" {
		t.Fatalf("Search(contents of the example) = %v: want show_example first", matchesString(ms))
	}
}

// A number is a value a request carries (an order number, a count, a time),
// not what a tool does: "the last 10 commits" is no request for a forecast of
// "1-10 days", nor "order 88123" for a tool that lists 100 of something.
func TestSearchDoesNotMatchNumbers(t *testing.T) {
	t.Parallel()
	r := registryOf(t,
		&toolreg.Spec{Name: "get_forecast", Description: "Daily forecast for the next 1-10 days."},
		&toolreg.Spec{Name: "get_commit_history", Description: "List the commits of a branch, newest first."},
		&toolreg.Spec{Name: "list_top_orders", Description: "The 100 largest orders (of up to 100_000)."},
	)
	if got := names(r.Search(registry.Query{Text: "show me the last 10 commits on main"})); !slices.Equal(got, []string{"get_commit_history"}) {
		t.Errorf(`Search("show me the last 10 commits on main") = %v, want [get_commit_history] alone`, got)
	}
	// Numbers joined by '-' or '_' are numbers too: "1-10" is no word "110".
	for _, q := range []string{"10 100", "1-10", "110", "100_000", "100000"} {
		if got := names(r.Search(registry.Query{Text: q})); len(got) != 0 {
			t.Errorf("Search(%q) = %v, want nothing", q, got)
		}
	}
	// Numbers are not query words either: however many come first, they do
	// not use up the words a query is read for.
	if got := names(r.Search(registry.Query{Text: strings.Repeat("7 ", 100) + "commits"})); !slices.Equal(got, []string{"get_commit_history"}) {
		t.Errorf("Search(100 numbers, then commits) = %v, want [get_commit_history]", got)
	}
	// A word with digits in it is a word: 2fa, e164, oauth2.
	r2 := registryOf(t, &toolreg.Spec{Name: "enable_2fa", Description: "Turn on two-factor authentication."})
	if got := names(r2.Search(registry.Query{Text: "2fa"})); !slices.Equal(got, []string{"enable_2fa"}) {
		t.Errorf(`Search("2fa") = %v, want [enable_2fa]`, got)
	}
}

// A remote tool whose server cannot be reached is not offered, and does not
// set the bar the others are measured against either: when the best match
// is unavailable, the tools that might stand in for it are still found, even
// those matching only loosely.
func TestSearchAnUnavailableToolHidesNoOther(t *testing.T) {
	t.Parallel()
	gate := new(toolbind.Gate)
	forecast := toolbind.Contract(&toolreg.Spec{Name: "get_weather_forecast", Description: "Weather forecast for the next days.", Tags: []string{"weather"}}, gate).(*toolreg.Tool)
	r := registryOfTools(t, forecast,
		toolreg.NewTool(&toolreg.Spec{Name: "get_conditions", Description: "Current temperature, wind and humidity."}))
	const q = "weather forecast"
	if got := names(r.Search(registry.Query{Text: q})); !slices.Equal(got, []string{"get_weather_forecast"}) {
		t.Fatalf("Search(%q) = %v, want [get_weather_forecast] alone (get_conditions matches far below it)", q, got)
	}
	gate.Suspend("its server does not answer")
	if got := names(r.Search(registry.Query{Text: q})); !slices.Equal(got, []string{"get_conditions"}) {
		t.Errorf("with get_weather_forecast unavailable, Search(%q) = %v, want [get_conditions]", q, got)
	}
}
