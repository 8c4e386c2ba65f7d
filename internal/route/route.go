// Package route decides where a request's Bedrock call goes: the model id a request names,
// or the targets of a configured alias, tried in order with failover, the first being the
// one that last answered the conversation (affinity; docs/PROTOCOL.md 14.4).
package route

import (
	"context"
	"errors"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/store"
)

// Upstream is the part of Bedrock a target's calls go to, in one region. *bedrock.Client
// implements it.
type Upstream interface {
	Converse(ctx context.Context, modelID string, req *bedrock.ConverseRequest) (*bedrock.ConverseResponse, error)
	ConverseStream(ctx context.Context, modelID string, req *bedrock.ConverseRequest) (*bedrock.EventStream, error)
}

// Target is one place the calls to an alias may go: a Bedrock model id in a region.
type Target struct {
	ModelID string
	// Region names the upstream of Options.Regions that serves the target; "" is
	// Options.Upstream, in the gateway's own region.
	Region string
}

// target is a Target ready for calls.
type target struct {
	Target
	up Upstream
	// family is the foundation model: the model id without its region prefix, which
	// reasoning blocks are bound to (docs/BEDROCK.md G9); the id itself when it names
	// none (an application inference profile).
	family string
	// name is the target in logs and in the affinity's memory: the model id, with
	// "@region" when the target has a region.
	name string
}

func newTarget(t Target, up Upstream) target {
	name := t.ModelID
	if t.Region != "" {
		name += "@" + t.Region
	}
	return target{Target: t, up: up, family: capabilities.Foundation(t.ModelID), name: name}
}

// alias is a configured alias: its name and its targets, in the order calls try them.
type alias struct {
	name    string
	targets []target
}

// Options configures a Router.
type Options struct {
	// Upstream is the Bedrock client of the gateway's own region.
	Upstream Upstream
	// Aliases maps model names clients send to their targets, in the order calls try
	// them; an alias of one model id has one target.
	Aliases map[string][]Target
	// Regions are the upstreams of the regions targets name, by region name. A target
	// whose region is missing here goes to Upstream, which New logs as an error.
	Regions map[string]Upstream
	// Affinity bounds the memory of which target answered each conversation.
	Affinity AffinityOptions
	// Shared, when set, shares that memory between replicas (docs/PROTOCOL.md 14.3).
	Shared store.Values
}

// Router finds each request's route. Safe for concurrent use.
type Router struct {
	upstream Upstream
	aliases  map[string]*alias
	// targets are the configured aliases' model ids, sorted, without repeats.
	targets  []string
	affinity *affinity
}

// New returns the Router of opts.
func New(opts Options, log *zap.Logger) *Router {
	r := &Router{upstream: opts.Upstream, aliases: make(map[string]*alias, len(opts.Aliases)),
		affinity: newAffinity(opts.Affinity, opts.Shared)}
	for _, name := range slices.Sorted(maps.Keys(opts.Aliases)) {
		a := &alias{name: name}
		for _, t := range opts.Aliases[name] {
			up := opts.Upstream
			if t.Region != "" {
				if u, ok := opts.Regions[t.Region]; ok {
					up = u
				} else {
					log.Error("no upstream for a target's region: its calls go to the gateway's own region",
						zap.String("alias", name), zap.String("region", t.Region))
				}
			}
			a.targets = append(a.targets, newTarget(t, up))
			r.targets = append(r.targets, t.ModelID)
		}
		if len(a.targets) > 0 {
			r.aliases[name] = a
		}
	}
	slices.Sort(r.targets)
	r.targets = slices.Compact(r.targets)
	return r
}

// Aliases are the configured aliases' names, sorted.
func (r *Router) Aliases() []string { return slices.Sorted(maps.Keys(r.aliases)) }

// Resolve is the model id name resolves to: an alias's first target, else name itself.
func (r *Router) Resolve(name string) string {
	if a, ok := r.aliases[name]; ok {
		return a.targets[0].ModelID
	}
	return name
}

// IsAlias reports whether name is a configured alias.
func (r *Router) IsAlias(name string) bool { _, ok := r.aliases[name]; return ok }

// Targets are the model ids of every alias's targets, sorted, without repeats.
func (r *Router) Targets() []string { return r.targets }

// Route is where one request's Bedrock call may go, and how far it got: the request's
// targets are tried once each, the first the conversation's affinity target (the target
// that last answered it) or else the alias's first, then the others in their order. Not
// safe for concurrent use.
type Route struct {
	// alias is the alias the request names; nil when it names a model id, whose one
	// target is one.
	alias *alias
	one   target
	// first is the index of the target tried first; attempt counts the targets tried
	// before the current one.
	first, attempt int
	// conversation is the request's affinity key; set only for an alias of several
	// targets.
	conversation conversationKey
}

// Route is where a request naming name (an alias, or a model id) may go. For an alias of
// several targets it looks up the conversation's affinity.
func (r *Router) Route(ctx context.Context, req *chat.Request, name string) Route {
	a, ok := r.aliases[name]
	if !ok {
		return Route{one: newTarget(Target{ModelID: name}, r.upstream)}
	}
	rt := Route{alias: a}
	if len(a.targets) > 1 {
		rt.conversation = conversationOf(a.name, req)
		rt.first = r.affinity.lookup(ctx, a, rt.conversation)
	}
	return rt
}

// Answered remembers the route's current target as the one that answered its
// conversation, for an alias of several targets.
func (r *Router) Answered(ctx context.Context, rt *Route) {
	if rt.alias != nil && len(rt.alias.targets) > 1 {
		r.affinity.remember(ctx, rt.conversation, rt.target().name)
	}
}

// len is how many targets the request may try.
func (r *Route) len() int {
	if r.alias == nil {
		return 1
	}
	return len(r.alias.targets)
}

// at is the k-th target to try: first, then the others in order.
func (r *Route) at(k int) *target {
	if r.alias == nil {
		return &r.one
	}
	i := k
	switch {
	case k == 0:
		i = r.first
	case k <= r.first:
		i = k - 1
	}
	return &r.alias.targets[i]
}

// target is the target of the current attempt.
func (r *Route) target() *target { return r.at(r.attempt) }

// ModelID is the current target's Bedrock model id.
func (r *Route) ModelID() string { return r.target().ModelID }

// Region is the current target's region; "" for the gateway's own.
func (r *Route) Region() string { return r.target().Region }

// Upstream is the current target's upstream.
func (r *Route) Upstream() Upstream { return r.target().up }

// Name is the current target in logs: its model id, with "@region" when it has one.
func (r *Route) Name() string { return r.target().name }

// Alias is the alias the request named; "" for a model id.
func (r *Route) Alias() string {
	if r.alias == nil {
		return ""
	}
	return r.alias.name
}

// More reports whether a target is left after the current one.
func (r *Route) More() bool { return r.attempt+1 < r.len() }

// Next moves on to the next target; it reports false, staying put, when none is left.
func (r *Route) Next() bool {
	if !r.More() {
		return false
	}
	r.attempt++
	return true
}

// OtherModel reports whether the current target is another foundation model than the one
// that last answered the conversation, the first tried (docs/PROTOCOL.md 14.4): the
// history's reasoning blocks are not its own.
func (r *Route) OtherModel() bool { return r.target().family != r.at(0).family }

// FailoverCode is the Bedrock error code of an error failover moves on after: the target
// is busy or failing, not the request wrong (docs/PROTOCOL.md 14.4); "" for any other.
func FailoverCode(err error) string {
	var apiErr *bedrock.APIError
	if errors.As(err, &apiErr) && apiErr.Failover() {
		return apiErr.Code
	}
	return ""
}
