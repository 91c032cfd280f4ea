package views

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
)

// Both languages name the same statuses, events, error codes, ….
func TestLabelTablesMatch(t *testing.T) {
	ru, en := LabelsFor("ru"), LabelsFor("en")
	for _, tc := range []struct {
		name   string
		ru, en map[string]string
	}{
		{"Statuses", ru.Statuses, en.Statuses},
		{"Roles", ru.Roles, en.Roles},
		{"Intents", ru.Intents, en.Intents},
		{"Targets", ru.Targets, en.Targets},
		{"Events", ru.Events, en.Events},
		{"ScopeFor", ru.ScopeFor, en.ScopeFor},
		{"Flashes", ru.Flashes, en.Flashes},
		{"Approval", ru.Approval, en.Approval},
		{"Errors", ru.Errors, en.Errors},
	} {
		r, e := slices.Sorted(maps.Keys(tc.ru)), slices.Sorted(maps.Keys(tc.en))
		if !slices.Equal(r, e) {
			t.Errorf("%s: Russian has %v, English %v", tc.name, r, e)
		}
	}
}

func TestErrorText(t *testing.T) {
	ru := LabelsFor("ru")
	for _, tc := range []struct{ code, message, want string }{
		{"TARGET_UNAVAILABLE", "the target is unavailable", "система недоступна"},
		{"APPROVAL_DENIED", "a person denied this operation", "операцию отклонил человек"},
		{"SOMETHING_NEW", "something new happened", "something new happened"},
		{"SOMETHING_NEW", "", "SOMETHING_NEW"},
		{"", "", ""},
	} {
		if got := ru.ErrorText(tc.code, tc.message); got != tc.want {
			t.Errorf("ErrorText(%q, %q) = %q, want %q", tc.code, tc.message, got, tc.want)
		}
	}
}

// Every code of the catalogue has its words in the admin pages, and the
// pages name no code the catalogue lacks.
func TestErrorLabelsAreTheCatalogue(t *testing.T) {
	labelled := slices.Sorted(maps.Keys(LabelsFor("en").Errors))
	if all := codes.All(); !slices.Equal(labelled, all) {
		for _, c := range all {
			if !slices.Contains(labelled, c) {
				t.Errorf("%s has no label", c)
			}
		}
		for _, c := range labelled {
			if !slices.Contains(all, c) {
				t.Errorf("%s is labelled but not in the catalogue", c)
			}
		}
	}
}

// Every text is set in both languages, the intents page's and the
// decisions' among them.
func TestEveryLabelSet(t *testing.T) {
	for _, lg := range []string{"ru", "en"} {
		var walk func(v reflect.Value, path string)
		walk = func(v reflect.Value, path string) {
			for i := 0; i < v.NumField(); i++ {
				f, name := v.Field(i), path+v.Type().Field(i).Name
				switch f.Kind() {
				case reflect.String:
					if f.String() == "" {
						t.Errorf("%s: %s is empty", lg, name)
					}
				case reflect.Map:
					if f.Len() == 0 {
						t.Errorf("%s: %s is empty", lg, name)
					}
				case reflect.Struct:
					walk(f, name+".")
				}
			}
		}
		walk(reflect.ValueOf(*LabelsFor(lg)), "")
	}
	ru, en := LabelsFor("ru"), LabelsFor("en")
	if r, e := slices.Sorted(maps.Keys(ru.TargetKinds)), slices.Sorted(maps.Keys(en.TargetKinds)); !slices.Equal(r, e) {
		t.Errorf("TargetKinds: Russian has %v, English %v", r, e)
	}
}

// A failed_final operation says who ended it: the target, a person, or
// the approval's time running out.
func TestOutcomeLabel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lang, status, code, want string }{
		{"ru", "failed_final", "REFERENCE_NOT_FOUND", "отказ системы"},
		{"ru", "failed_final", "APPROVAL_DENIED", "отклонено человеком"},
		{"ru", "failed_final", "DUPLICATE_CONFIRMED", "отклонено человеком"},
		{"ru", "failed_final", "APPROVAL_EXPIRED", "не согласовано вовремя"},
		{"en", "failed_final", "POSTING_REFUSED", "refused by the target"},
		{"en", "failed_final", "APPROVAL_DENIED", "denied by a person"},
		{"en", "succeeded", "", "succeeded"},
		{"ru", "unknown", "OUTCOME_UNKNOWN", "исход неизвестен"},
	} {
		if got := LabelsFor(tc.lang).OutcomeLabel(tc.status, tc.code); got != tc.want {
			t.Errorf("%s %s %s: %q, want %q", tc.lang, tc.status, tc.code, got, tc.want)
		}
	}
}
