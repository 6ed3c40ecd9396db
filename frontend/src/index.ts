// Entry of static/index.js. TensorBoard's plugin iframe imports this module and calls render().
import { App } from "./app";
import { injectCss } from "./ui/styles";

let app: App | null = null;

export function render(): void {
  if (app) return;
  injectCss(document);
  app = new App();
  app.mount(document.body);
  (window as unknown as { __adLayer: ReturnType<App["testHook"]> }).__adLayer = app.testHook();
  void app.start();
}
