// Shared state: a recipe that the user edits in the page and the agent
// edits on request. It lives in the agent's state, {recipe: {title,
// skill_level, cooking_time, special_preferences, ingredients: [{icon,
// name, amount}], instructions}}, which goes with every run; what the
// agent changes comes back into the form, marked with a dot until the run
// ends.
import { useEffect, useRef, useState } from "react";
import { useAgent, UseAgentUpdate, useConfigureSuggestions, useCopilotKit } from "@copilotkit/react-core/v2";
import { Sidebar } from "../layout.jsx";

const skillLevels = ["Beginner", "Intermediate", "Advanced"];
const cookingTimes = ["5 min", "15 min", "30 min", "45 min", "60+ min"];
const preferences = ["High Protein", "Low Carb", "Spicy", "Budget-Friendly", "One-Pot Meal", "Vegetarian", "Vegan"];

const firstRecipe = {
  title: "Make Your Recipe",
  skill_level: "Intermediate",
  cooking_time: "45 min",
  special_preferences: [],
  ingredients: [
    { icon: "🥕", name: "Carrots", amount: "3 large, grated" },
    { icon: "🌾", name: "All-Purpose Flour", amount: "2 cups" },
  ],
  instructions: ["Preheat oven to 350°F (175°C)"],
};

export default function SharedState() {
  return (
    <div className="page-recipe">
      <RecipeForm />
      <Sidebar agentId="shared_state" title="AI Recipe Assistant" />
    </div>
  );
}

function RecipeForm() {
  const { agent } = useAgent({
    agentId: "shared_state",
    updates: [UseAgentUpdate.OnStateChanged, UseAgentUpdate.OnRunStatusChanged],
  });
  const { copilotkit } = useCopilotKit();
  const running = agent.isRunning;

  useConfigureSuggestions({
    suggestions: [
      { title: "Create Italian recipe", message: "Create a delicious Italian pasta recipe." },
      { title: "Make it healthier", message: "Make the recipe healthier with more vegetables." },
      { title: "Suggest variations", message: "Suggest some creative variations of this recipe." },
    ],
    available: "always",
  });

  // The agent's state starts with the first recipe.
  useEffect(() => {
    if (!agent.state?.recipe) agent.setState({ recipe: firstRecipe });
    // Once, on mount: a recipe the agent clears later stays cleared.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const [recipe, setRecipe] = useState(firstRecipe);
  const [editing, setEditing] = useState(null);

  // What the agent's recipe has that the form has not: taken into the form,
  // and marked as changed while the run goes on.
  const fromAgent = { ...recipe };
  const changed = [];
  for (const key of Object.keys(recipe)) {
    let value = agent.state?.recipe?.[key];
    if (value === undefined || value === null) continue;
    if (typeof value === "string") value = value.replace(/\\n/g, "\n");
    if (JSON.stringify(value) !== JSON.stringify(recipe[key])) {
      fromAgent[key] = value;
      changed.push(key);
    }
  }
  const marked = useRef([]);
  if (changed.length > 0) marked.current = changed;
  else if (!running) marked.current = [];

  const snapshot = JSON.stringify(fromAgent);
  useEffect(() => {
    setRecipe(JSON.parse(snapshot));
  }, [snapshot]);

  // edit changes the form and the agent's state together.
  const edit = (part) => {
    const next = { ...recipe, ...part };
    agent.setState({ ...(agent.state ?? {}), recipe: next });
    setRecipe(next);
  };
  const setIngredient = (i, field, value) =>
    edit({ ingredients: recipe.ingredients.map((ing, j) => (j === i ? { ...ing, [field]: value } : ing)) });
  const setInstruction = (i, value) => edit({ instructions: recipe.instructions.map((s, j) => (j === i ? value : s)) });

  const improve = () => {
    if (running) return;
    agent.addMessage({ id: crypto.randomUUID(), role: "user", content: "Improve the recipe" });
    copilotkit.runAgent({ agent });
  };

  const mark = (field) => (marked.current.includes(field) ? <span className="ping" aria-label="changed by the agent" /> : null);

  return (
    <form data-testid="recipe-card" className="recipe-card" onSubmit={(e) => e.preventDefault()}>
      <div className="recipe-header">
        <input className="recipe-title-input" value={recipe.title || ""} onChange={(e) => edit({ title: e.target.value })} />
        <div className="recipe-meta">
          <label>
            <span aria-hidden="true">🕒</span>
            <select
              aria-label="Cooking time"
              value={cookingTimes.includes(recipe.cooking_time) ? recipe.cooking_time : "45 min"}
              onChange={(e) => edit({ cooking_time: e.target.value })}
            >
              {cookingTimes.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          </label>
          <label>
            <span aria-hidden="true">🏆</span>
            <select aria-label="Skill level" value={recipe.skill_level} onChange={(e) => edit({ skill_level: e.target.value })}>
              {skillLevels.map((l) => (
                <option key={l}>{l}</option>
              ))}
            </select>
          </label>
        </div>
      </div>

      <section className="section-container">
        {mark("special_preferences")}
        <h2 className="section-title">Dietary Preferences</h2>
        <div className="dietary-options">
          {preferences.map((p) => (
            <label key={p} className="dietary-option">
              <input
                type="checkbox"
                checked={recipe.special_preferences.includes(p)}
                onChange={(e) =>
                  edit({
                    special_preferences: e.target.checked
                      ? [...recipe.special_preferences, p]
                      : recipe.special_preferences.filter((x) => x !== p),
                  })
                }
              />
              <span>{p}</span>
            </label>
          ))}
        </div>
      </section>

      <section className="section-container">
        {mark("ingredients")}
        <div className="section-header">
          <h2 className="section-title">Ingredients</h2>
          <button
            data-testid="add-ingredient-button"
            type="button"
            className="add-button"
            onClick={() => edit({ ingredients: [...recipe.ingredients, { icon: "🍴", name: "", amount: "" }] })}
          >
            + Add Ingredient
          </button>
        </div>
        <div data-testid="ingredients-container" className="ingredients-container">
          {recipe.ingredients.map((ing, i) => (
            <div key={i} data-testid="ingredient-card" className="ingredient-card">
              <div className="ingredient-icon">{ing.icon || "🍴"}</div>
              <div className="ingredient-content">
                <input
                  className="ingredient-name-input"
                  placeholder="Ingredient name"
                  value={ing.name || ""}
                  onChange={(e) => setIngredient(i, "name", e.target.value)}
                />
                <input
                  className="ingredient-amount-input"
                  placeholder="Amount"
                  value={ing.amount || ""}
                  onChange={(e) => setIngredient(i, "amount", e.target.value)}
                />
              </div>
              <button
                type="button"
                className="remove-button"
                aria-label="Remove ingredient"
                onClick={() => edit({ ingredients: recipe.ingredients.filter((_, j) => j !== i) })}
              >
                ×
              </button>
            </div>
          ))}
        </div>
      </section>

      <section className="section-container">
        {mark("instructions")}
        <div className="section-header">
          <h2 className="section-title">Instructions</h2>
          <button
            type="button"
            className="add-button"
            onClick={() => {
              edit({ instructions: [...recipe.instructions, ""] });
              setEditing(recipe.instructions.length);
            }}
          >
            + Add Step
          </button>
        </div>
        <div data-testid="instructions-container" className="instructions-container">
          {recipe.instructions.map((step, i) => (
            <div key={i} className="instruction-item">
              <div className="instruction-number">{i + 1}</div>
              <div className={editing === i ? "instruction-content editing" : "instruction-content"}>
                <textarea
                  className="instruction-textarea"
                  value={step || ""}
                  placeholder={step ? "" : "Enter cooking instruction..."}
                  autoFocus={editing === i && !step}
                  onChange={(e) => setInstruction(i, e.target.value)}
                  onFocus={() => setEditing(i)}
                  onBlur={() => setEditing(null)}
                />
                <button
                  type="button"
                  className="remove-button"
                  aria-label="Remove instruction"
                  onClick={() => edit({ instructions: recipe.instructions.filter((_, j) => j !== i) })}
                >
                  ×
                </button>
              </div>
            </div>
          ))}
        </div>
      </section>

      <div className="action-container">
        <button data-testid="improve-button" type="button" className="improve-button" disabled={running} onClick={improve}>
          {running ? "Please Wait..." : "Improve with AI"}
        </button>
      </div>
    </form>
  );
}
