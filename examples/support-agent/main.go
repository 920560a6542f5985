package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"
)

//go:embed conversation.json
var defaultScript []byte

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("support-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifests := fs.String("manifests", "manifests", "the tool manifests `dir`")
	state := fs.String("state", filepath.Join(".state", "support-agent"), "the state `dir` holding the effector's SQLite dedup store (created if missing) when -store names none")
	storeSpec := fs.String("store", "", "the effector's dedup `store`: a SQLite file path, a postgres:// URL (its tables are migrated), or a redis:// URL (default: effects.db in the -state dir)")
	scriptFile := fs.String("script", "", "a conversation script `file` (default: the embedded conversation.json)")
	provider := fs.String("provider", "openai", "the model provider's `SDK`: openai (openai-go, Chat Completions) or anthropic (anthropic-sdk-go, Messages)")
	model := fs.String("model", "", "the model `name` to ask when the provider's API key is set (default gpt-4.1-mini, or claude-sonnet-4-5 with -provider anthropic)")
	offline := fs.Bool("offline", false, "use the scripted endpoint even when the provider's API key is set")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *provider != "openai" && *provider != "anthropic" {
		fmt.Fprintf(stderr, "support-agent: -provider %q: want openai or anthropic\n", *provider)
		return 2
	}
	script := defaultScript
	if *scriptFile != "" {
		b, err := os.ReadFile(*scriptFile)
		if err != nil {
			fmt.Fprintf(stderr, "support-agent: %v\n", err)
			return 1
		}
		script = b
	}
	var conv conversation
	if err := json.Unmarshal(script, &conv); err != nil {
		fmt.Fprintf(stderr, "support-agent: script: %v\n", err)
		return 1
	}
	if _, err := os.Stat(*manifests); err != nil {
		fmt.Fprintf(stderr, "support-agent: no manifests at %q: run from the repository root or pass -manifests\n", *manifests)
		return 1
	}
	svc, err := start(ctx, *manifests, *state, *storeSpec, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "support-agent: %v\n", err)
		return 1
	}
	defer svc.close()
	models, closeModels, err := openModels(svc, &conv, *provider, *model, *offline)
	if err != nil {
		fmt.Fprintf(stderr, "support-agent: %v\n", err)
		return 1
	}
	defer closeModels()
	if err := svc.play(ctx, &conv, models); err != nil {
		fmt.Fprintf(stderr, "support-agent: %v\n", err)
		return 1
	}
	return 0
}

// openModels returns the model the service talks to through provider's SDK:
// the one the provider's API key names (OPENAI_API_KEY and OPENAI_BASE_URL,
// or ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL), or else the scripted
// conversation served from a local in-process endpoint that speaks the
// provider's API (Chat Completions, or Messages).
func openModels(svc *service, conv *conversation, provider, model string, offline bool) (modelProvider, func(), error) {
	if provider == "anthropic" {
		return openAnthropic(svc, conv, model, offline)
	}
	if model == "" {
		model = "gpt-4.1-mini"
	}
	if key := os.Getenv("OPENAI_API_KEY"); key != "" && !offline {
		opts := []option.RequestOption{option.WithAPIKey(key)}
		where := "https://api.openai.com/v1/"
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			opts = append(opts, option.WithBaseURL(base))
			where = base
		}
		p, err := newOpenAIProvider(svc.bound.Pipeline, model, fmt.Sprintf("%s at %s, through openai-go (OPENAI_API_KEY is set)", model, where), true, opts...)
		return p, func() {}, err
	}
	replies, err := scriptedReplies(conv, "scripted")
	if err != nil {
		return nil, nil, err
	}
	ep := newChatEndpoint(replies)
	p, err := newOpenAIProvider(svc.bound.Pipeline, "scripted",
		"the scripted conversation, served as Chat Completions responses by a local in-process endpoint, through openai-go (set OPENAI_API_KEY for a real model)",
		false, option.WithBaseURL(ep.baseURL()), option.WithAPIKey("scripted"))
	if err != nil {
		ep.close()
		return nil, nil, err
	}
	return p, ep.close, nil
}

// openAnthropic is openModels for -provider anthropic.
func openAnthropic(svc *service, conv *conversation, model string, offline bool) (modelProvider, func(), error) {
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	if key := os.Getenv("ANTHROPIC_API_KEY"); key != "" && !offline {
		opts := []anthropicoption.RequestOption{anthropicoption.WithAPIKey(key)}
		where := "https://api.anthropic.com/"
		if base := os.Getenv("ANTHROPIC_BASE_URL"); base != "" {
			opts = append(opts, anthropicoption.WithBaseURL(base))
			where = base
		}
		p, err := newAnthropicProvider(svc.bound.Pipeline, model, fmt.Sprintf("%s at %s, through anthropic-sdk-go (ANTHROPIC_API_KEY is set)", model, where), true, opts...)
		return p, func() {}, err
	}
	replies, err := scriptedMessages(conv, "scripted")
	if err != nil {
		return nil, nil, err
	}
	ep := newMessagesEndpoint(replies)
	p, err := newAnthropicProvider(svc.bound.Pipeline, "scripted",
		"the scripted conversation, served as Messages API responses by a local in-process endpoint, through anthropic-sdk-go (set ANTHROPIC_API_KEY for a real model)",
		false, anthropicoption.WithBaseURL(ep.baseURL()), anthropicoption.WithAPIKey("scripted"))
	if err != nil {
		ep.close()
		return nil, nil, err
	}
	return p, ep.close, nil
}
