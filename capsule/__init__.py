"""Pure handoff capsule: model, budgets, rendering, context assembly."""
