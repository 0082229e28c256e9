// What Figma adds to a plugin's UI document when figma.showUI is called with
// `themeColors: true`: a `figma-light` or `figma-dark` class on <html> and a
// `<style id="figma-style">` defining its colour variables. The test page does the same so
// the UI is seen as in Figma. The names are Figma's; the values are close to its UI3 light and
// dark themes (Figma's own set is larger; these are the ones the plugin's stylesheet uses, and
// a test fails if it uses one that is not here).

export type Theme = "light" | "dark";

export const FIGMA_THEME: Record<Theme, Record<string, string>> = {
  light: {
    "--figma-color-bg": "#ffffff",
    "--figma-color-bg-secondary": "#f5f5f5",
    "--figma-color-bg-tertiary": "#e6e6e6",
    "--figma-color-bg-hover": "#f5f5f5",
    "--figma-color-bg-brand": "#0d99ff",
    "--figma-color-bg-brand-hover": "#007be5",
    "--figma-color-bg-brand-tertiary": "#e5f4ff",
    "--figma-color-bg-disabled": "#d9d9d9",
    "--figma-color-bg-danger": "#f24822",
    "--figma-color-bg-danger-tertiary": "#ffe2e0",
    "--figma-color-bg-success-tertiary": "#cff7d3",
    "--figma-color-bg-warning-tertiary": "#fff1c2",
    "--figma-color-text": "rgba(0, 0, 0, 0.9)",
    "--figma-color-text-secondary": "rgba(0, 0, 0, 0.5)",
    "--figma-color-text-disabled": "rgba(0, 0, 0, 0.3)",
    "--figma-color-text-brand": "#007be5",
    "--figma-color-text-onbrand": "#ffffff",
    "--figma-color-text-ondisabled": "#ffffff",
    "--figma-color-text-ondanger": "#ffffff",
    "--figma-color-text-danger": "#dc3412",
    "--figma-color-text-success": "#009951",
    "--figma-color-text-warning": "#b86200",
    "--figma-color-border": "#e6e6e6",
    "--figma-color-border-selected": "#0d99ff",
  },
  dark: {
    "--figma-color-bg": "#2c2c2c",
    "--figma-color-bg-secondary": "#383838",
    "--figma-color-bg-tertiary": "#444444",
    "--figma-color-bg-hover": "#383838",
    "--figma-color-bg-brand": "#0c8ce9",
    "--figma-color-bg-brand-hover": "#0a6dc2",
    "--figma-color-bg-brand-tertiary": "#394360",
    "--figma-color-bg-disabled": "#757575",
    "--figma-color-bg-danger": "#e03e1a",
    "--figma-color-bg-danger-tertiary": "#4d2f2b",
    "--figma-color-bg-success-tertiary": "#253c2f",
    "--figma-color-bg-warning-tertiary": "#4d3e24",
    "--figma-color-text": "#ffffff",
    "--figma-color-text-secondary": "rgba(255, 255, 255, 0.7)",
    "--figma-color-text-disabled": "rgba(255, 255, 255, 0.4)",
    "--figma-color-text-brand": "#7cc4f8",
    "--figma-color-text-onbrand": "#ffffff",
    "--figma-color-text-ondisabled": "rgba(255, 255, 255, 0.4)",
    "--figma-color-text-ondanger": "#ffffff",
    "--figma-color-text-danger": "#fca397",
    "--figma-color-text-success": "#79d297",
    "--figma-color-text-warning": "#f7d15f",
    "--figma-color-border": "#444444",
    "--figma-color-border-selected": "#0c8ce9",
  },
};

/** The UI document as Figma shows it with themeColors: the class on <html>, the style in <head>. */
export function withTheme(html: string, theme: Theme): string {
  const vars = Object.entries(FIGMA_THEME[theme])
    .map(([k, v]) => `${k}: ${v};`)
    .join(" ");
  const style = `<style id="figma-style">:root { ${vars} }</style>`;
  return html
    .replace(/<html\b([^>]*)>/, (_m, attrs: string) => `<html${attrs} class="figma-${theme}">`)
    .replace(/<head>/, () => `<head>${style}`);
}
