package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// The whitelist of intents as the commands load it (serve, check,
// intents, bench) and hand it to the targets.

// loadCatalog loads the whitelist the configuration names (intents_dir,
// builtin_intents, limits) for its target instances, strictly: any error
// in any definition refuses it, naming the file, the path inside it and
// what is wrong.
func loadCatalog(cfg config.Config) (*intent.Catalog, error) {
	c, err := intent.Load(intent.Options{
		Dir: cfg.IntentsDir, Builtins: cfg.BuiltinIntents, Targets: cfg.Targets.Names(), Kinds: cfg.Targets.Kinds(), Limits: cfg.Limits, Duplicates: cfg.Duplicates,
	})
	if err != nil {
		return nil, fmt.Errorf("intent definitions:\n%w", err)
	}
	if _, err := c.CheckEvents(cfg.Events, cfg.File()); err != nil {
		return nil, fmt.Errorf("events:\n%w", err)
	}
	return c, nil
}

// bindCatalog gives every built target the definitions naming it; a
// target's refusal stops the start.
func bindCatalog(c *intent.Catalog, targets map[string]adapters.Target) error {
	if missing := slices.DeleteFunc(c.Targets(), func(t string) bool { _, ok := targets[t]; return ok }); len(missing) > 0 {
		return fmt.Errorf("intent definitions: no target instance %s is built (built: %s)", strings.Join(missing, ", "), strings.Join(slices.Sorted(maps.Keys(targets)), ", "))
	}
	if err := c.Bind(targets); err != nil {
		return fmt.Errorf("intent definitions:\n%w", err)
	}
	return nil
}

// maxListed bounds how many operations a refusal lists.
const maxListed = 20

// editedInPlace refuses a catalog whose definitions were edited in place
// while unfinished operations of the journal were accepted under their
// old text (another digest of the file): those operations would run
// under a meaning they were not accepted with. It lists them.
func editedInPlace(ctx context.Context, st *store.Store, c *intent.Catalog) error {
	ops, err := st.Unfinished(ctx)
	if err != nil {
		return err
	}
	var lines []string
	n := 0
	for _, op := range ops {
		in, ok := c.Version(op.Intent, max(op.IntentVersion, 1))
		if !ok || op.IntentDigest == "" || in.Accepts(op.IntentDigest) {
			continue
		}
		if n++; n <= maxListed {
			lines = append(lines, fmt.Sprintf("  %s (%s v%d, %s, accepted %s)", op.Key, op.Intent, max(op.IntentVersion, 1), op.Status, op.CreatedAt.UTC().Format(time.RFC3339)))
		}
	}
	if n == 0 {
		return nil
	}
	if n > maxListed {
		lines = append(lines, fmt.Sprintf("  … and %d more", n-maxListed))
	}
	return fmt.Errorf("intent definitions were edited in place while %d unfinished operations were accepted under their old text; "+
		"put the old files back until these are final (settle them in the admin UI), and give a new meaning a new version in a new file:\n%s", n, strings.Join(lines, "\n"))
}

// catalog loads the configuration and its whitelist.
func (c configFlags) catalog(env func(string) string) (*intent.Catalog, error) {
	cfg, err := c.load(env)
	if err != nil {
		return nil, err
	}
	return loadCatalog(cfg)
}
