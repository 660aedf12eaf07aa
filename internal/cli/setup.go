package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/workflows"
)

type setupOptions struct {
	conn connectOptions
	wait time.Duration
}

func newSetupCmd() *cobra.Command {
	o := &setupOptions{}
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Register Gleaner's search attributes on an existing Temporal server",
		Long: `Registers Gleaner's search attributes (GleanerCampaign, GleanerKind,
GleanerStatus, … with their types) in the namespace through the operator
service, so that campaigns, trials and pools can set them and be found in
the web UI. Attributes already registered with the right type are left as
they are, so running setup again is harmless; one registered with another
type is an error (exit 1). Waits up to --wait until the server lists them
all. Needs operator rights on the namespace (Temporal Cloud: register them
in the Cloud UI or with tcld instead).

Run it once per namespace before the first worker; 'gleaner dev' and the
dev server started by 'make devserver' do it for you.`,
		Example: `  gleaner setup
  gleaner setup --address temporal.example.org:7233 --namespace research`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.DurationVar(&o.wait, "wait", 30*time.Second, "how long to wait until the server lists every attribute")
	o.conn.addFlags(f)
	return cmd
}

func (o *setupOptions) run(ctx context.Context, flags *pflag.FlagSet, stdout, stderr io.Writer) error {
	if o.wait < 0 {
		return usageErrorf("--wait %v: must not be negative", o.wait)
	}
	cfg, err := o.conn.config(flags)
	if err != nil {
		return err
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	return registerSearchAttributes(ctx, c.Temporal(), cfg.Namespace, o.wait, stdout)
}

// registerSearchAttributes adds the missing workflows.SearchAttributes to
// namespace and waits until the server lists them all.
func registerSearchAttributes(ctx context.Context, tc tclient.Client, namespace string, wait time.Duration, w io.Writer) error {
	op := tc.OperatorService()
	list := func() (map[string]enumspb.IndexedValueType, error) {
		resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err != nil {
			return nil, fmt.Errorf("listing the search attributes of namespace %s: %w", namespace, err)
		}
		return resp.GetCustomAttributes(), nil
	}
	have, err := list()
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	var conflicts []error
	for _, k := range workflows.SearchAttributes {
		name, want := k.GetName(), k.GetValueType()
		got, ok := have[name]
		switch {
		case !ok:
			missing[name] = want
		case got != want:
			conflicts = append(conflicts, fmt.Errorf("search attribute %s is %s in namespace %s, Gleaner needs %s (remove it or use another namespace)",
				name, workflows.SearchAttributeTypeName(got), namespace, workflows.SearchAttributeTypeName(want)))
		default:
			fmt.Fprintf(w, "%-22s %-8s already registered\n", name, workflows.SearchAttributeTypeName(want))
		}
	}
	if err := errors.Join(conflicts...); err != nil {
		return err
	}
	if len(missing) == 0 {
		fmt.Fprintf(w, "namespace %s: all %d Gleaner search attributes were registered already\n", namespace, len(workflows.SearchAttributes))
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) { // a concurrent setup registered them: fine
		return fmt.Errorf("registering search attributes in namespace %s: %w", namespace, err)
	}
	for _, k := range workflows.SearchAttributes {
		if _, ok := missing[k.GetName()]; ok {
			fmt.Fprintf(w, "%-22s %-8s registered\n", k.GetName(), workflows.SearchAttributeTypeName(k.GetValueType()))
		}
	}

	deadline := time.Now().Add(wait)
	for {
		have, err := list()
		if err != nil {
			return err
		}
		var absent []string
		for name := range missing {
			if _, ok := have[name]; !ok {
				absent = append(absent, name)
			}
		}
		if len(absent) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s: the server does not list %v yet after %v; run setup again later", namespace, absent, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprintf(w, "namespace %s: registered %d Gleaner search attributes, %d were there already\n",
		namespace, len(missing), len(workflows.SearchAttributes)-len(missing))
	return nil
}
