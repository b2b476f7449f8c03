//! What the model is told about a tool's arguments, derived from the very struct the tool reads
//! them into (`schemars`): a field added, renamed or made optional changes the schema with it,
//! so what the model is told and what `parse` accepts cannot drift apart.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::protocol::ToolClass;
use crate::server::conversation::ToolSpec;

/// The spec of a tool whose arguments are read into `A` (which must `deny_unknown_fields`).
/// Each field's `///` doc comment (or `#[schemars(description = …)]`) is what the model reads
/// about that argument.
pub fn spec_for<A: JsonSchema>(
    name: &'static str,
    description: &'static str,
    class: ToolClass,
) -> ToolSpec {
    ToolSpec {
        name,
        description,
        class,
        parameters: arguments_schema::<A>(),
    }
}

/// `A`'s JSON schema as a provider's `parameters` takes it: one self-contained object, without
/// the meta-schema, the Rust type's name or `default` values (which say nothing to a model),
/// and with `required` always present.
pub fn arguments_schema<A: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Some(object) = schema.as_object_mut() {
        // The struct's own doc comment is for engineers; the tool's description is the model's.
        object.remove("title");
        object.remove("description");
        // Every provider reads `required`; one with no required argument says so.
        object
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for property in properties.values_mut() {
                if let Some(property) = property.as_object_mut() {
                    property.remove("default");
                }
            }
        }
    }
    schema
}
