import { useMutation, useQuery } from "@apollo/client/react";
import { type FormEvent, useState } from "react";
import { AddMemberDocument, type MemberFieldsFragment, type MemberRole, MembersDocument, RemoveMemberDocument, SetMemberRoleDocument } from "../../gql/graphql";
import { useServerAccess } from "../../lib/access";
import { Badge } from "../Badge";
import { Button } from "../Button";
import { ConfirmDialog } from "../Dialog";
import { Field, FormError, Select, TextInput } from "../Field";
import { Section } from "../Page";
import { Skeleton } from "../States";
import { Table } from "../Table";
import styles from "./People.module.css";

export const ROLE_LABELS: Record<MemberRole, string> = {
  VIEWER: "Viewer: search and chat",
  EDITOR: "Editor: and documents, tools",
  OWNER: "Owner: and settings, members",
};
const ROLES: MemberRole[] = ["VIEWER", "EDITOR", "OWNER"];

/** Whether the caller may change the members: an owner, an administrator, or a server key (no person). */
export function canManageMembers(me: { id: string; isAdmin: boolean } | null, members: readonly MemberFieldsFragment[]): boolean {
  if (!me) return true;
  return me.isAdmin || members.some((m) => m.person.id === me.id && m.role === "OWNER");
}

function problemOf(result: { __typename?: string; message?: string } | undefined, fallback: string): string | null {
  if (!result || result.__typename === "Member" || result.__typename === "MemberRemoved") return null;
  return result.message ?? fallback;
}

/** A knowledge base's members: who may do what there. Its owners (and administrators) change them; everyone else reads. */
export function MembersPanel({ knowledgeBaseId }: { knowledgeBaseId: string }) {
  // Who the caller is decides the controls: until that is known the rows wait too, so a viewer
  // never sees (and cannot click) an owner's controls for the moment before it arrives.
  const { access, loading: accessLoading } = useServerAccess();
  const me = access?.me ?? null;
  const { data, loading, error } = useQuery(MembersDocument, { variables: { knowledgeBaseId } });
  const list = data?.members.__typename === "MemberList" && (access || !accessLoading) ? data.members.members : null;
  const editable = list !== null && canManageMembers(me, list);
  const refetch = { refetchQueries: [{ query: MembersDocument, variables: { knowledgeBaseId } }], awaitRefetchQueries: true };
  const [add, adding] = useMutation(AddMemberDocument, refetch);
  const [setRole] = useMutation(SetMemberRoleDocument, refetch);
  const [remove] = useMutation(RemoveMemberDocument, refetch);
  const [email, setEmail] = useState("");
  const [role, setNewRole] = useState<MemberRole>("VIEWER");
  const [emailError, setEmailError] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [doomed, setDoomed] = useState<MemberFieldsFragment | null>(null);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setProblem(null);
    if (!email.includes("@")) return setEmailError("Enter the email they sign in with.");
    setEmailError(null);
    const { data: result } = await add({ variables: { knowledgeBaseId, email: email.trim(), role } });
    const answer = result?.addMember;
    if (answer?.__typename === "ValidationError" && answer.fields.length > 0) return setEmailError(answer.fields[0]!.message);
    const wrong = problemOf(answer, "They could not be added.");
    if (wrong) return setProblem(wrong);
    setEmail("");
  }

  async function change(member: MemberFieldsFragment, next: MemberRole) {
    setProblem(null);
    const { data: result } = await setRole({ variables: { knowledgeBaseId, personId: member.person.id, role: next } });
    setProblem(problemOf(result?.setMemberRole, "The role was not changed."));
  }

  async function confirmRemove(): Promise<string | null> {
    if (!doomed) return null;
    const { data: result } = await remove({ variables: { knowledgeBaseId, personId: doomed.person.id } });
    const wrong = problemOf(result?.removeMember, "They could not be removed.");
    if (!wrong) setDoomed(null);
    return wrong;
  }

  return (
    <Section id="members-title" title="Members">
      {(loading || accessLoading) && !list && <Skeleton lines={2} label="Loading members" />}
      {error && !data && <FormError role="alert">Could not load the members: {error.message}</FormError>}
      {data && !list && "message" in data.members && <FormError role="alert">{data.members.message}</FormError>}
      {list && (
        <Table label="Members" compact>
          <thead>
            <tr>
              <th scope="col">Person</th>
              <th scope="col">Role</th>
              {editable && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {list.map((member) => (
              <tr key={member.person.id} data-testid="member-row" data-email={member.person.email}>
                <td>
                  {member.person.name || member.person.email} {member.person.id === me?.id && <Badge tone="soft">you</Badge>}
                  <span className={styles.sub}>{member.person.email}</span>
                </td>
                <td>
                  {editable ? (
                    <Select aria-label={`Role of ${member.person.email}`} value={member.role} onChange={(e) => void change(member, e.target.value as MemberRole)}>
                      {ROLES.map((r) => (
                        <option key={r} value={r}>
                          {ROLE_LABELS[r]}
                        </option>
                      ))}
                    </Select>
                  ) : (
                    ROLE_LABELS[member.role].split(":")[0]
                  )}
                </td>
                {editable && (
                  <td className={styles.actions}>
                    <Button size="small" variant="ghost" aria-label={`Remove ${member.person.email}`} onClick={() => setDoomed(member)}>
                      Remove
                    </Button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      {editable && (
        <form className={styles.addForm} onSubmit={(e) => void submit(e)} noValidate aria-label="Add a member">
          <Field label="Email" error={emailError}>
            <TextInput type="email" value={email} onChange={(e) => setEmail(e.target.value)} />
          </Field>
          <Field label="Role">
            <Select value={role} onChange={(e) => setNewRole(e.target.value as MemberRole)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {ROLE_LABELS[r]}
                </option>
              ))}
            </Select>
          </Field>
          <Button type="submit" disabled={adding.loading}>
            Add member
          </Button>
        </form>
      )}
      {problem && <FormError role="alert">{problem}</FormError>}
      <ConfirmDialog open={doomed !== null} title="Remove member?" confirmLabel="Remove" danger onConfirm={confirmRemove} onCancel={() => setDoomed(null)}>
        <p>
          <strong>{doomed?.person.email}</strong> will no longer see this knowledge base or its shared chats. Their own chats here stay theirs.
        </p>
      </ConfirmDialog>
    </Section>
  );
}
