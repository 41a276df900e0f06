// Monaco's web workers, bundled by Vite (`?worker`) and served from /assets like the rest: GraphiQL's
// own setup files either load them from esm.sh or log each one, and the playground must work offline.
import EditorWorker from "monaco-editor/esm/vs/editor/editor.worker.js?worker";
import JsonWorker from "monaco-editor/esm/vs/language/json/json.worker.js?worker";
import GraphQLWorker from "monaco-graphql/esm/graphql.worker.js?worker";

// Where monaco looks for its workers (monaco-editor types it on `self`).
self.MonacoEnvironment = {
  getWorker(_workerId: string, label: string) {
    if (label === "json") return new JsonWorker();
    if (label === "graphql") return new GraphQLWorker();
    return new EditorWorker();
  },
};
