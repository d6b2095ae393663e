package stdlib

import (
	"context"
	"fmt"

	"github.com/aguic/aguic/vm"
)

func activitySync() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "activity sync",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, execActivitySync(c)
		},
		Pure: true,
		Doc:  "Compares the value at `from` with the activity's hidden baseline, emits ACTIVITY_DELTA (RFC 6902) when that is smaller and ACTIVITY_SNAPSHOT otherwise, then makes the value the new baseline.",
		Arg:  activityID(),
		Keys: []vm.KeySpec{
			activityType(),
			{Name: "from", Type: vm.TypePath, Required: true,
				Doc: "The context path holding the activity's content, such as $activity.plan."},
			{Name: "replace", Type: vm.TypeBool, Default: true,
				Doc: "Whether the first snapshot of the run replaces an existing activity message with this id; false keeps the existing one and only creates a missing one. Later snapshots always replace the message the run sent."},
			{Name: "snapshots_only", Type: vm.TypeBool, Default: false,
				Doc: "Always emit ACTIVITY_SNAPSHOT, never ACTIVITY_DELTA."},
		},
		Example: "activity sync \"plan-1\" {\n" +
			"  type = \"PLAN\"\n" +
			"  from = $activity.plan\n" +
			"}",
	}
}

func activitySnapshot() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "activity snapshot",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, execActivitySnapshot(c)
		},
		Pure: true,
		Doc:  "Emits ACTIVITY_SNAPSHOT, creating the activity message or setting its whole content.",
		Arg:  activityID(),
		Keys: []vm.KeySpec{
			activityType(),
			{Name: "content", Type: vm.TypeAny, Required: true,
				Doc: "The activity's whole content, usually an object."},
			replaceKey(),
		},
		Example: "activity snapshot \"plan-1\" {\n" +
			"  type    = \"PLAN\"\n" +
			"  content = {steps: [{title: \"Search\", status: \"in_progress\"}]}\n" +
			"}",
	}
}

func activityDelta() *vm.KindSpec {
	return &vm.KindSpec{
		Name: "activity delta",
		Exec: func(ctx context.Context, c *vm.Call) (vm.Step, error) {
			return vm.Step{}, execActivityDelta(c)
		},
		Pure: true,
		Doc:  "Emits ACTIVITY_DELTA, changing the activity's content by the given RFC 6902 JSON Patch operations.",
		Arg:  activityID(),
		Keys: []vm.KeySpec{
			activityType(),
			{Name: "patch", Type: vm.TypeList, Required: true,
				Doc: `The RFC 6902 operations, such as [{op: "replace", path: "/steps/0/status", value: "done"}].`},
		},
		Example: "activity delta \"plan-1\" {\n" +
			"  type  = \"PLAN\"\n" +
			"  patch = [{op: \"replace\", path: \"/steps/0/status\", value: \"done\"}]\n" +
			"}",
	}
}

func activityID() *vm.ArgSpec {
	return &vm.ArgSpec{Name: "activity id", Type: vm.TypeString, Required: true,
		Doc: "The activity's id; the client's activity message is activity:<id>."}
}

func activityType() vm.KeySpec {
	return vm.KeySpec{Name: "type", Type: vm.TypeString, Required: true,
		Doc: `The activity type the client renders it by, such as "PLAN".`}
}

func replaceKey() vm.KeySpec {
	return vm.KeySpec{Name: "replace", Type: vm.TypeBool, Default: true,
		Doc: "Whether a snapshot replaces an existing activity message with this id; false keeps the existing one and only creates a missing one."}
}

// activityBaseline is the hidden baseline of one activity message: what the
// client was last sent.
type activityBaseline struct {
	Type    string
	Content any
}

func activityKey(id string) string { return vm.ActivityPrefix + id }

// loadActivity returns the baseline of activity id; ok is false when the
// run has sent none.
func loadActivity(c *vm.Call, id string) (a activityBaseline, ok bool) {
	m, ok := c.Hidden(activityKey(id)).(map[string]any)
	if !ok {
		return activityBaseline{}, false
	}
	a.Type, _ = m["type"].(string)
	a.Content = m["content"]
	return a, true
}

func saveActivity(c *vm.Call, id string, a activityBaseline) {
	c.SetHidden(activityKey(id), map[string]any{"type": a.Type, "content": a.Content})
}

// activityHead reads what every activity kind has: the id and the type.
func activityHead(c *vm.Call) (id, typ string, err error) {
	what := c.Spec.Name
	v, err := c.Arg()
	if err != nil {
		return "", "", err
	}
	id, ok := v.(string)
	if !ok || id == "" {
		return "", "", vm.Errorf(vm.ErrNode, "%s: the activity id must be a non-empty string, found %s", what, vm.Describe(v))
	}
	if err := c.UnpackKeys("type", &typ); err != nil {
		return "", "", err
	}
	if typ == "" {
		return "", "", vm.Errorf(vm.ErrNode, "%s %q: type must be a non-empty string", what, id)
	}
	return id, typ, nil
}

// execActivitySync brings the client's activity message from its baseline
// to the value at from. The first sync of an activity is a snapshot with
// the node's replace; later snapshots (a changed type, snapshots_only, or
// a patch longer than the content) always replace, since the client holds
// the message this run sent.
func execActivitySync(c *vm.Call) error {
	id, typ, err := activityHead(c)
	if err != nil {
		return err
	}
	content, err := activityContent(c, "from")
	if err != nil {
		return err
	}
	var replace, only bool
	if err := c.UnpackKeys("replace", &replace, "snapshots_only", &only); err != nil {
		return err
	}
	base, had := loadActivity(c, id)
	plan, err := diffSync(base.Content, content, had, only || base.Type != typ)
	if err != nil {
		return vm.Errorf(vm.ErrNode, "activity sync %q: %v", id, err)
	}
	if had && base.Type == typ && !plan.Changed {
		return nil
	}
	e := vm.Event{Type: vm.ActivityDelta, MessageID: activityKey(id), ActivityType: typ, Patch: plan.Patch}
	if plan.Snapshot || !plan.Changed {
		if had {
			replace = true
		}
		e = vm.Event{Type: vm.ActivitySnapshot, MessageID: activityKey(id), ActivityType: typ, Value: content, Replace: &replace}
	}
	if err := c.Emit(e); err != nil {
		return err
	}
	saveActivity(c, id, activityBaseline{Type: typ, Content: content})
	return nil
}

// activityContent reads the key holding an activity's content, which must
// be an object (AG-UI 1.0 requires one).
func activityContent(c *vm.Call, key string) (map[string]any, error) {
	var v any
	if err := c.UnpackKeys(key, &v); err != nil {
		return nil, err
	}
	content, ok := vm.Normalize(v).(map[string]any)
	if !ok {
		return nil, vm.Errorf(vm.ErrNode, "%s: an activity's content must be an object, found %s", c.Spec.Name, vm.Describe(v))
	}
	return content, nil
}

// execActivitySnapshot sends an activity's whole content. With replace
// false a client that holds the message keeps it, so a baseline this run
// already has stays.
func execActivitySnapshot(c *vm.Call) error {
	id, typ, err := activityHead(c)
	if err != nil {
		return err
	}
	content, err := activityContent(c, "content")
	if err != nil {
		return err
	}
	var replace bool
	if err := c.UnpackKeys("replace", &replace); err != nil {
		return err
	}
	if err := c.Emit(vm.Event{Type: vm.ActivitySnapshot, MessageID: activityKey(id), ActivityType: typ, Value: content, Replace: &replace}); err != nil {
		return err
	}
	if _, had := loadActivity(c, id); replace || !had {
		saveActivity(c, id, activityBaseline{Type: typ, Content: content})
	}
	return nil
}

// execActivityDelta sends operations on an activity's content. When the
// run holds the activity's baseline they must apply to it, and it follows.
func execActivityDelta(c *vm.Call) error {
	id, typ, err := activityHead(c)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("activity delta %q", id)
	var v any
	if err := c.UnpackKeys("patch", &v); err != nil {
		return err
	}
	ops, err := patchOps(what, v)
	if err != nil {
		return err
	}
	base, had := loadActivity(c, id)
	var next any
	if had {
		if next, err = applyPatch(what, base.Content, ops); err != nil {
			return err
		}
	}
	if err := c.Emit(vm.Event{Type: vm.ActivityDelta, MessageID: activityKey(id), ActivityType: typ, Patch: vm.Copy(ops).([]any)}); err != nil {
		return err
	}
	if had {
		saveActivity(c, id, activityBaseline{Type: typ, Content: next})
	}
	return nil
}
