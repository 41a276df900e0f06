import type { CodegenConfig } from "@graphql-codegen/cli";

// Offline: the schema is the committed ../schema.graphql (exported by `make schema`), never a live
// server. Codegen validates every operation against it and fails the build when one does not fit.
const config: CodegenConfig = {
  schema: "../schema.graphql",
  documents: ["src/graphql/**/*.graphql"],
  ignoreNoDocuments: false,
  generates: {
    "src/gql/": {
      preset: "client",
      presetConfig: { fragmentMasking: false },
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        // DateTime arrives as an ISO 8601 string; Upload is a file sent with the multipart request.
        scalars: { DateTime: "string", Upload: "File" },
      },
    },
    // Apollo's cache needs the members of each union and interface (the result unions, `Error`)
    // to match fragments such as `... on Error { message }`.
    "src/gql/possible-types.ts": {
      plugins: ["fragment-matcher"],
      config: { useExplicitTyping: true },
    },
  },
};

export default config;
