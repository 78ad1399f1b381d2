package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/intentq/intentq/config"
	"github.com/intentq/intentq/internal/base/encryption"
)

func newKeygen() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "add a new payload encryption key to the keyring (temporal.encryption.key_file); it encrypts from now on, older keys still decrypt",
		Long: "keygen appends a random AES-256 key to the keyring file (created 0600; default\n" +
			"data_dir/encryption.keys). Every worker and starter that talks to the same cluster needs the\n" +
			"same keyring: copy the file (or one of its lines as INTENTQ_TEMPORAL_ENCRYPTION_KEY).\n" +
			"Restart the workers to encrypt with the new key; keep the old lines while histories\n" +
			"written with them may still be read.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags())
			if err != nil {
				return err
			}
			path := cfg.EncryptionKeyFile()
			id, err := encryption.AppendKey(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "key %s added to %s; it encrypts from the next worker start (temporal.encryption.mode: %s)\n", id, path, cfg.Temporal.Encryption.Mode)
			return nil
		},
	}
}
