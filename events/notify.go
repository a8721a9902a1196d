package events

// KindNotifyRulesSet is the kind of a change of the changes one
// notification destination receives.
const KindNotifyRulesSet = "notify.rules_set"

// Scopes of a notification rule (NotifyRule.Scope).
const (
	ScopeAll     = "all"     // every device
	ScopeWatched = "watched" // devices being watched
	ScopeGroup   = "group"   // devices whose group is NotifyRule.Group
	ScopeNetwork = "network" // devices with an address in NotifyRule.Network
)

// NotifyRulesSet is the payload of notify.rules_set: the whole selection
// of one destination (notify.<name> of the configuration) from now on. A
// change is sent to the destination when any rule selects it; an empty
// list sends nothing. The stream is "notify/<destination>".
type NotifyRulesSet struct {
	Destination string       `json:"destination"`
	Rules       []NotifyRule `json:"rules"`
}

// NotifyRule selects change-log kinds (projections' device.* kinds) of
// the devices in a scope.
type NotifyRule struct {
	Kinds []string `json:"kinds"`
	Scope string   `json:"scope"`
	// Group is the device group of scope "group"; empty otherwise.
	Group string `json:"group,omitempty"`
	// Network is the CIDR prefix of scope "network"; empty otherwise.
	Network string `json:"network,omitempty"`
}
