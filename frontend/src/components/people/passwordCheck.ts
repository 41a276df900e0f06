import { MIN_PASSWORD } from "./AuthCard";

/** The client's checks of a new password typed twice (the server checks the length again). */
export function newPasswordProblems(password: string, again: string): { password?: string; again?: string } {
  if (password.length < MIN_PASSWORD) return { password: `At least ${MIN_PASSWORD} characters.` };
  if (password !== again) return { again: "The two passwords differ." };
  return {};
}
