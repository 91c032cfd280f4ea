package main

import (
	"flag"

	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
)

// configFlags holds the flags of the commands that read the configuration.
type configFlags struct {
	config string
	data   string
	// newJournal (serve --new-journal): begin a new journal where a lost
	// one was.
	newJournal bool
}

// flags declares --config and --data on fs.
func (c *configFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "configuration `FILE` (YAML; default $ONCEGATE_CONFIG, else the embedded defaults)")
	fs.StringVar(&c.data, "data", "", "data directory `DIR` (overrides the configuration's data_dir)")
}

// load reads the configuration and applies --data.
func (c configFlags) load(env func(string) string) (config.Config, error) {
	path := c.config
	if path == "" {
		path = env("ONCEGATE_CONFIG")
	}
	// Limits may name only the currencies the payments target sends.
	cfg, err := config.Load(path, env, yookassa.Currencies())
	if err != nil {
		return cfg, err
	}
	if c.data != "" {
		cfg.DataDir = c.data
	}
	return cfg, nil
}
