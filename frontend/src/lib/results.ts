// Result unions come back as `{ __typename, ... }`; these helpers read the error members.

export interface FieldErrorLike {
  field: string;
  message: string;
}

export type FieldErrors = Record<string, string>;

/** `ValidationError.fields` as a map field -> message (the first message per field wins). */
export function fieldErrorsOf(result: { __typename?: string; fields?: FieldErrorLike[] } | null | undefined): FieldErrors {
  const out: FieldErrors = {};
  for (const { field, message } of result?.fields ?? []) {
    // files[0] and input.topK style paths: key by the last plain segment
    const key = field.replace(/\[\d+\]$/, "").split(".").pop() ?? field;
    out[key] ??= message;
  }
  return out;
}
