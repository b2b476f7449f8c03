//! `/config`: the resolved configuration grouped by section — each key's value, where it came
//! from (the file or the default), protected keys locked with the reason, the rest editable in
//! place — with the config file's path and a banner when the file on disk is invalid.

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;

use crate::api;
use crate::protocol::{ConfigInput, ConfigKey, ConfigSource, ConfigView};
use crate::ui::browser;
use crate::ui::gates::ClientId;
use crate::ui::json;
use crate::ui::sidebar::PageLayout;

/// The tab title on this page.
const TITLE: &str = "Config — Countersign";

/// The sections in the order the README lists them; any other section follows.
const SECTIONS: [&str; 7] = [
    "provider",
    "approvals",
    "safety",
    "budget",
    "storage",
    "tools",
    "notify",
];

#[component]
pub fn ConfigPage() -> impl IntoView {
    view! {
        <PageLayout>
            <Config/>
        </PageLayout>
    }
}

#[component]
fn Config() -> impl IntoView {
    provide_context(ClientId::new());
    Effect::new(|_| browser::set_page_title(TITLE));
    let initial = json::resource(|| (), |_| api::config_view());
    view! {
        <Suspense fallback=|| view! {
            <header class="page-header"><h1>"Config"</h1></header>
            <div class="page-body"><p class="loading">"Loading…"</p></div>
        }>
            {move || Suspend::new(async move {
                match initial.await {
                    Ok(initial) => view! { <ConfigBody initial/> }.into_any(),
                    Err(err) => view! {
                        <header class="page-header"><h1>"Config"</h1></header>
                        <div class="page-body">
                            <p class="error" role="alert">{api::error_message(&err)}</p>
                        </div>
                    }
                    .into_any(),
                }
            })}
        </Suspense>
    }
}

/// The view the page shows and how to fetch it again. Answers that arrive after the page is
/// gone, or after a newer fetch started, are dropped.
#[derive(Clone, Copy)]
struct ConfigState {
    view: RwSignal<ConfigView>,
    /// Fetches started; only the latest one's answer is applied.
    fetches: RwSignal<u64>,
    in_flight: RwSignal<usize>,
    error: RwSignal<Option<String>>,
}

impl ConfigState {
    fn new(initial: ConfigView) -> Self {
        ConfigState {
            view: RwSignal::new(initial),
            fetches: RwSignal::new(0),
            in_flight: RwSignal::new(0),
            error: RwSignal::new(None),
        }
    }

    fn refresh(self) {
        let Some(n) = self.fetches.try_update(|n| {
            *n += 1;
            *n
        }) else {
            return;
        };
        self.in_flight.try_update(|k| *k += 1);
        spawn_local(async move {
            let result = api::config_view().await;
            self.in_flight.try_update(|k| *k = k.saturating_sub(1));
            if self.fetches.try_get_untracked() != Some(n) {
                return;
            }
            match result {
                Ok(view) => {
                    self.view.try_set(view);
                    self.error.try_set(None);
                }
                Err(err) => {
                    self.error.try_set(Some(api::error_message(&err)));
                }
            }
        });
    }
}

/// The page once the first view has loaded. Later views (after a save, or Reload) replace it
/// in place, so rows whose value did not change keep their state.
#[component]
fn ConfigBody(initial: ConfigView) -> impl IntoView {
    let config = ConfigState::new(initial);
    let state = config.view;
    let sections = section_names(state);
    let api_key = move || state.with(|v| v.provider_api_key.clone());
    let api_key_set = move || state.with(|v| v.provider_api_key.starts_with("set"));
    view! {
        <ConfigHeader config/>
        <div class="page-body">
            {move || state.with(|v| v.error.clone()).map(|error| view! {
                <div class="config-error" role="alert" data-testid="config-error">
                    "The config file on disk is invalid; the last good config is in force: "
                    <span class="config-error-detail">{error}</span>
                </div>
            })}
            {move || config.error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <p class="config-intro muted">
                "Changes here are written to the config file and take effect at once. Locked keys \
                 can only be changed in the file or with the local CLI."
            </p>
            <p class="config-secret" data-testid="config-api-key">
                "Provider API key: "
                <span class="secret-state" class:set=api_key_set>{api_key}</span>
            </p>
            <ConfigTable sections config/>
        </div>
    }
}

/// The sections to show: the README's order first, then any other, each only if it has keys.
fn section_names(state: RwSignal<ConfigView>) -> Memo<Vec<String>> {
    Memo::new(move |_| {
        state.with(|v| {
            let mut names: Vec<String> = SECTIONS.iter().map(|s| (*s).to_owned()).collect();
            for k in &v.keys {
                let section = section_of(&k.key).to_owned();
                if !names.contains(&section) {
                    names.push(section);
                }
            }
            names.retain(|s| v.keys.iter().any(|k| section_of(&k.key) == s));
            names
        })
    })
}

/// The page's title, the config file's path and Reload.
#[component]
fn ConfigHeader(config: ConfigState) -> impl IntoView {
    let state = config.view;
    let reloading = move || config.in_flight.get() > 0;
    let path = move || state.with(|v| v.path.clone());
    view! {
        <header class="page-header">
            <h1>"Config"</h1>
            <p class="muted config-path">"File: " <code data-testid="config-path">{path}</code></p>
            <div class="audit-tools">
                <button type="button" class="small" data-testid="config-reload" disabled=reloading
                    on:click=move |_| config.refresh()>
                    {move || if reloading() { "Reloading…" } else { "Reload" }}
                </button>
            </div>
        </header>
    }
}

/// The keys' table, a group of rows per section.
#[component]
fn ConfigTable(sections: Memo<Vec<String>>, config: ConfigState) -> impl IntoView {
    view! {
        <div class="table-wrap">
            <table class="data-table config-table">
                <thead>
                    <tr>
                        <th scope="col">"Key"</th>
                        <th scope="col">"Value"</th>
                        <th scope="col">"Source"</th>
                        <th scope="col">"Notes"</th>
                        <th scope="col"><span class="sr-only">"Actions"</span></th>
                    </tr>
                </thead>
                <For each=move || sections.get() key=|s| s.clone() let:section>
                    <ConfigSection section config/>
                </For>
            </table>
        </div>
    }
}

#[component]
fn ConfigSection(section: String, config: ConfigState) -> impl IntoView {
    let state = config.view;
    let rows = {
        let section = section.clone();
        move || {
            state.with(|v| {
                v.keys
                    .iter()
                    .filter(|k| section_of(&k.key) == section)
                    .cloned()
                    .collect::<Vec<_>>()
            })
        }
    };
    view! {
        <tbody data-section=section>
            <tr class="config-section">
                <th scope="rowgroup" colspan="5">{section.clone()}</th>
            </tr>
            <For each=rows key=row_key let:entry>
                <ConfigRow entry config/>
            </For>
        </tbody>
    }
}

/// A row is rebuilt when anything it shows changes.
fn row_key(k: &ConfigKey) -> (String, String, String, bool, Option<String>, Option<String>) {
    (
        k.key.clone(),
        k.value.to_string(),
        k.source.as_str().to_owned(),
        k.protected,
        k.default.as_ref().map(Value::to_string),
        k.note.clone(),
    )
}

#[component]
fn ConfigRow(entry: ConfigKey, config: ConfigState) -> impl IntoView {
    let editing = RwSignal::new(false);
    let name = key_name(&entry.key);
    let default = default_hint(&entry);
    let shown = entry.clone();
    let edited = entry.clone();
    let protected = entry.protected;
    view! {
        <tr class="config-row" data-testid="config-row" data-key=entry.key.clone() data-protected=protected.to_string()
            data-source=entry.source.as_str() class:editing=move || editing.get()>
            <td class="config-key"><code title=entry.key.clone()>{name}</code></td>
            <td class="config-value">
                <Show
                    when=move || editing.get()
                    fallback=move || view! {
                        <ValueDisplay entry=shown.clone()/>
                    }
                >
                    <Editor entry=edited.clone() editing config/>
                </Show>
                {default}
            </td>
            <td class="config-source">
                <span class="source-badge" data-source=entry.source.as_str() data-testid="config-source">
                    {entry.source.as_str()}
                </span>
            </td>
            <td class="config-notes"><ConfigNotes entry=entry.clone()/></td>
            <td class="config-actions">
                {(!protected).then(|| view! {
                    <button type="button" class="small" data-testid="config-edit"
                        aria-label=format!("Edit {}", entry.key)
                        disabled=move || editing.get() on:click=move |_| editing.set(true)>
                        "Edit"
                    </button>
                })}
            </td>
        </tr>
    }
}

/// A key's name within its section (`approvals.timeout` reads `timeout`).
fn key_name(key: &str) -> String {
    key.split_once('.')
        .map(|(_, name)| name.to_owned())
        .unwrap_or_else(|| key.to_owned())
}

/// The default under a value the file changed, so a person sees what they moved away from.
fn default_hint(entry: &ConfigKey) -> Option<impl IntoView + use<>> {
    let differs =
        entry.source == ConfigSource::File && entry.default.as_ref() != Some(&entry.value);
    entry
        .default
        .as_ref()
        .filter(|_| differs)
        .map(|d| view! { <span class="muted sub" data-testid="config-default">"default: " {display(d)}</span> })
}

/// Why a key is locked, whether changing it needs a restart, and its note.
#[component]
fn ConfigNotes(entry: ConfigKey) -> impl IntoView {
    let lock = entry.protected.then(|| {
        let reason = entry
            .reason
            .clone()
            .unwrap_or_else(|| "protected".to_owned());
        view! {
            <span class="config-lock" data-testid="config-locked" title="Change it in the config file or with the local CLI">
                <LockIcon/>"Locked"
            </span>
            <span class="muted sub" data-testid="config-reason">{reason}</span>
        }
    });
    let restart = entry.restart_required.then(|| {
        view! { <span class="config-restart" data-testid="config-restart">"Restart required to apply"</span> }
    });
    let note = entry
        .note
        .clone()
        .map(|note| view! { <span class="muted sub" data-testid="config-note">{note}</span> });
    view! { {lock} {restart} {note} }
}

/// A small padlock drawn in the text colour (an emoji may have no glyph).
#[component]
fn LockIcon() -> impl IntoView {
    view! {
        <svg class="lock-icon" viewBox="0 0 16 16" width="12" height="12" aria-hidden="true" focusable="false">
            <rect x="3" y="7" width="10" height="8" rx="1.5" fill="currentColor"/>
            <path d="M5 7V5a3 3 0 0 1 6 0v2" fill="none" stroke="currentColor" stroke-width="1.8"/>
        </svg>
    }
}

/// A value as a person reads it: text without quotes, a list item by item, a switch on or
/// off, a number with its unit.
#[component]
fn ValueDisplay(entry: ConfigKey) -> impl IntoView {
    let unit = entry
        .unit
        .clone()
        .filter(|_| entry.value.is_number())
        .map(|unit| view! { " " <span class="config-unit muted" data-testid="config-unit">{unit}</span> });
    match &entry.value {
        Value::Bool(on) => {
            let on = *on;
            view! {
                <span class="config-switch-shown">
                    <input type="checkbox" role="switch" class="switch" disabled checked=on
                        aria-label=format!("{} is {}", entry.key, display(&entry.value))/>
                    <code data-testid="config-value">{display(&entry.value)}</code>
                </span>
            }
            .into_any()
        }
        Value::Array(items) if !items.is_empty() => view! {
            <ul class="config-list" data-testid="config-value">
                {items.iter().map(|item| view! { <li><code>{display(item)}</code></li> }).collect_view()}
            </ul>
        }
        .into_any(),
        value => {
            let text = display(value);
            if text.is_empty() {
                view! { <span class="muted" data-testid="config-value">"(empty)"</span> }.into_any()
            } else {
                view! { <code data-testid="config-value">{text}</code> {unit} }.into_any()
            }
        }
    }
}

/// The inline editor, the control the key's kind takes (`ConfigKey::input`): a switch, a
/// select of its words, a number with its unit, a list one item a line, text. Enter (but in a
/// list) or Save sends it, Esc cancels; a value the control cannot send is said next to it.
#[component]
fn Editor(entry: ConfigKey, editing: RwSignal<bool>, config: ConfigState) -> impl IntoView {
    let input_id = format!(
        "config-input-{}",
        entry.key.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    );
    {
        let input_id = input_id.clone();
        Effect::new(move |_| browser::focus(&input_id));
    }
    let draft = Draft {
        text: RwSignal::new(edit_text(&entry.value)),
        on: RwSignal::new(entry.value.as_bool().unwrap_or(false)),
        busy: RwSignal::new(false),
        error: RwSignal::new(None),
        editing,
        config,
        client: use_context::<ClientId>().unwrap_or_default(),
    };
    let (text, on, busy, error) = (draft.text, draft.on, draft.busy, draft.error);
    let save = {
        let entry = entry.clone();
        move || draft.save(&entry)
    };
    let on_key = editor_keys(entry.input != ConfigInput::List, save.clone(), editing);
    let control = Control {
        entry: &entry,
        id: input_id,
        text,
        on,
    }
    .view(on_key);
    view! {
        <div class="config-editor">
            {control}
            <div class="config-editor-actions">
                <button type="button" class="small primary" data-testid="config-save" disabled=move || busy.get()
                    on:click=move |_| save()>
                    {move || if busy.get() { "Saving…" } else { "Save" }}
                </button>
                <button type="button" class="small" data-testid="config-cancel" on:click=move |_| editing.set(false)>
                    "Cancel " <kbd>"Esc"</kbd>
                </button>
            </div>
            {move || error.get().map(|e| view! {
                <p class="error config-save-error" role="alert" data-testid="config-save-error">{e}</p>
            })}
        </div>
    }
}

/// The editor's keys: Enter saves (but in a list, where it starts a new line), Esc cancels.
fn editor_keys(
    enter_saves: bool,
    save: impl Fn() + Clone + 'static,
    editing: RwSignal<bool>,
) -> impl Fn(KeyboardEvent) + Clone + 'static {
    move |ev: KeyboardEvent| match ev.key().as_str() {
        "Enter" if enter_saves => {
            ev.prevent_default();
            save();
        }
        "Escape" => {
            ev.prevent_default();
            editing.set(false);
        }
        _ => {}
    }
}

/// What the editor holds while a key is edited, and sending it.
#[derive(Clone, Copy)]
struct Draft {
    text: RwSignal<String>,
    on: RwSignal<bool>,
    busy: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    editing: RwSignal<bool>,
    config: ConfigState,
    client: ClientId,
}

impl Draft {
    /// Sends the draft as `entry`'s kind of value (one audited change of one key); on success
    /// the editor closes and the page fetches the config again, else the problem is shown.
    fn save(self, entry: &ConfigKey) {
        if self.busy.get_untracked() {
            return;
        }
        self.error.set(None);
        let value = match value_of(entry, &self.text.get_untracked(), self.on.get_untracked()) {
            Ok(value) => value,
            Err(problem) => {
                self.error.set(Some(problem));
                return;
            }
        };
        self.busy.set(true);
        let key = entry.key.clone();
        let client_id = self.client.get_untracked();
        spawn_local(async move {
            let result = api::set_config(key, value, client_id).await;
            self.busy.try_set(false);
            match result {
                Ok(()) => {
                    self.editing.try_set(false);
                    self.config.refresh();
                }
                Err(err) => {
                    self.error.try_set(Some(api::error_message(&err)));
                }
            }
        });
    }
}

/// The editor's one control, by the key's kind.
struct Control<'a> {
    entry: &'a ConfigKey,
    id: String,
    text: RwSignal<String>,
    on: RwSignal<bool>,
}

impl Control<'_> {
    fn view(self, on_key: impl Fn(KeyboardEvent) + Clone + 'static) -> AnyView {
        let Control {
            entry,
            id,
            text,
            on,
        } = self;
        let label = format!("New value for {}", entry.key);
        let set_text = move |ev| text.set(event_target_value(&ev));
        match entry.input {
            ConfigInput::Switch => view! {
                <label class="config-switch">
                    <input id=id type="checkbox" role="switch" class="switch" data-testid="config-input" aria-label=label
                        prop:checked=move || on.get() on:change=move |ev| on.set(event_target_checked(&ev))
                        on:keydown=on_key/>
                    <span>{move || if on.get() { "on" } else { "off" }}</span>
                </label>
            }
            .into_any(),
            ConfigInput::Choice => {
                let options = entry.options.clone();
                view! {
                    <select id=id data-testid="config-input" aria-label=label prop:value=move || text.get()
                        on:change=set_text on:keydown=on_key>
                        {options.into_iter().map(|word| {
                            let (chosen, value) = (word.clone(), word.clone());
                            view! { <option value=value selected=move || text.get() == chosen>{word}</option> }
                        }).collect_view()}
                    </select>
                }
                .into_any()
            }
            ConfigInput::Number => number_input(entry, id, &label, text, on_key),
            ConfigInput::List => view! {
                <textarea id=id rows="4" data-testid="config-input" spellcheck="false"
                    aria-label=format!("{label}, one a line") prop:value=move || text.get()
                    on:input=set_text on:keydown=on_key></textarea>
            }
            .into_any(),
            ConfigInput::Text => view! {
                <input id=id type="text" data-testid="config-input" spellcheck="false" aria-label=label
                    prop:value=move || text.get() on:input=set_text on:keydown=on_key/>
            }
            .into_any(),
        }
    }
}

/// A number's field with its unit; a number that also takes a word (`auto`) is typed as text.
fn number_input(
    entry: &ConfigKey,
    id: String,
    label: &str,
    text: RwSignal<String>,
    on_key: impl Fn(KeyboardEvent) + Clone + 'static,
) -> AnyView {
    let set_text = move |ev| text.set(event_target_value(&ev));
    let kind = if entry.options.is_empty() {
        "number"
    } else {
        "text"
    };
    let unit = entry.unit.clone().unwrap_or_default();
    let hint = entry.options.join(" or ");
    view! {
        <span class="config-number">
            <input id=id type=kind inputmode="numeric" min="0" step="1" data-testid="config-input"
                aria-label=format!("{label}, in {unit}") placeholder=hint spellcheck="false"
                prop:value=move || text.get() on:input=set_text on:keydown=on_key/>
            <span class="config-unit muted">{unit.clone()}</span>
        </span>
    }
    .into_any()
}

fn section_of(key: &str) -> &str {
    key.split_once('.').map_or(key, |(section, _)| section)
}

/// How the page shows a value: text as it is (never quoted), true and false as on and off, a
/// list's items one after another.
fn display(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "on".to_owned(),
        Value::Bool(false) => "off".to_owned(),
        Value::Array(items) => items.iter().map(display).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// What the editor starts with: text as it is, a number's digits, a list one item a line.
fn edit_text(value: &Value) -> String {
    match value {
        Value::Array(items) => items.iter().map(display).collect::<Vec<_>>().join("\n"),
        Value::Bool(_) => String::new(),
        other => display(other),
    }
}

/// What the editor sends for `entry`: the control's text (or the switch) as the key's kind
/// of value, or what is wrong with it, in words.
fn value_of(entry: &ConfigKey, text: &str, on: bool) -> Result<Value, String> {
    let text = text.trim();
    match entry.input {
        ConfigInput::Switch => Ok(Value::Bool(on)),
        ConfigInput::Choice | ConfigInput::Text => Ok(Value::String(text.to_owned())),
        ConfigInput::List => Ok(Value::Array(
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(|line| Value::String(line.to_owned()))
                .collect(),
        )),
        ConfigInput::Number => {
            if entry.options.iter().any(|word| word == text) {
                return Ok(Value::String(text.to_owned()));
            }
            text.parse::<u64>().map(Value::from).map_err(|_| {
                let unit = entry.unit.as_deref().unwrap_or("units");
                let or = entry
                    .options
                    .iter()
                    .map(|word| format!(" or {word}"))
                    .collect::<String>();
                format!(
                    "{} takes a whole number of {unit} (0 or more){or}",
                    entry.key
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(input: ConfigInput, options: &[&str], unit: Option<&str>) -> ConfigKey {
        ConfigKey {
            key: "tools.shell_timeout_secs".into(),
            value: json!(120),
            default: None,
            source: ConfigSource::Default,
            protected: false,
            reason: None,
            restart_required: false,
            note: None,
            input,
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            unit: unit.map(str::to_owned),
        }
    }

    #[test]
    fn values_show_without_quotes() {
        assert_eq!(display(&json!("gpt-4o-mini")), "gpt-4o-mini");
        assert_eq!(display(&json!(120)), "120");
        assert_eq!(display(&json!(true)), "on");
        assert_eq!(display(&json!(false)), "off");
        assert_eq!(display(&json!(["**/.env*", "sudo"])), "**/.env*, sudo");
        assert_eq!(edit_text(&json!("gpt-4o-mini")), "gpt-4o-mini");
        assert_eq!(edit_text(&json!(["a b", "c"])), "a b\nc");
    }

    #[test]
    fn each_control_sends_its_keys_kind_of_value() {
        let number = key(ConfigInput::Number, &[], Some("seconds"));
        assert_eq!(value_of(&number, " 45 ", false), Ok(json!(45)));
        let refused = value_of(&number, "-5", false).unwrap_err();
        assert!(
            refused.contains("tools.shell_timeout_secs") && refused.contains("seconds"),
            "{refused}"
        );
        assert!(value_of(&number, "soon", false).is_err());
        let auto = key(ConfigInput::Number, &["auto"], Some("tokens"));
        assert_eq!(value_of(&auto, "auto", false), Ok(json!("auto")));
        assert_eq!(value_of(&auto, "8192", false), Ok(json!(8192)));
        assert!(
            value_of(&auto, "big", false)
                .unwrap_err()
                .contains("or auto")
        );
        let text = key(ConfigInput::Text, &[], None);
        assert_eq!(
            value_of(&text, "\"quoted\"", false),
            Ok(json!("\"quoted\""))
        );
        assert_eq!(
            value_of(&text, "45", false),
            Ok(json!("45")),
            "text stays text"
        );
        let switch = key(ConfigInput::Switch, &[], None);
        assert_eq!(value_of(&switch, "", true), Ok(json!(true)));
        let choice = key(ConfigInput::Choice, &["demo", "openai"], None);
        assert_eq!(value_of(&choice, "openai", false), Ok(json!("openai")));
        let list = key(ConfigInput::List, &[], None);
        assert_eq!(
            value_of(&list, "a b\n\n c \n", false),
            Ok(json!(["a b", "c"]))
        );
    }
}
