import { useMutation, useQuery } from "@apollo/client/react";
import { useState } from "react";
import { AppShell } from "../components/AppShell";
import { AppSidebar } from "../components/AppSidebar";
import { Badge } from "../components/Badge";
import { Button } from "../components/Button";
import { Dialog } from "../components/Dialog";
import { FormError } from "../components/Field";
import { PlusIcon } from "../components/icons";
import { Page, PageHeader } from "../components/Page";
import { InvitationLink, InviteDialog } from "../components/people/InviteDialog";
import { ErrorState, Skeleton } from "../components/States";
import { Table } from "../components/Table";
import { type InvitationFieldsFragment, PeopleDocument, type PersonFieldsFragment, ResetPasswordDocument, SetPersonDisabledDocument } from "../gql/graphql";
import { useMe } from "../lib/access";
import { formatRelative } from "../lib/format";
import styles from "../components/people/People.module.css";

/** `/settings/people` (administrators): everyone who may sign in; invite, disable or enable, reset a password. */
export function PeoplePage() {
  const me = useMe();
  const { data, loading, error, refetch } = useQuery(PeopleDocument, { fetchPolicy: "cache-and-network" });
  const [inviting, setInviting] = useState(false);
  const [link, setLink] = useState<InvitationFieldsFragment | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [setDisabled] = useMutation(SetPersonDisabledDocument);
  const [reset] = useMutation(ResetPasswordDocument);

  async function toggle(person: PersonFieldsFragment) {
    setProblem(null);
    const { data: result } = await setDisabled({ variables: { id: person.id, disabled: !person.disabled } });
    const answer = result?.setPersonDisabled;
    if (answer?.__typename !== "Person") setProblem(answer && "message" in answer ? answer.message : "Nothing changed.");
  }

  async function resetPassword(person: PersonFieldsFragment) {
    setProblem(null);
    const { data: result } = await reset({ variables: { id: person.id } });
    const answer = result?.resetPassword;
    if (answer?.__typename === "Invitation") setLink(answer);
    else setProblem(answer && "message" in answer ? answer.message : "The password could not be reset.");
  }

  const inviteButton = (
    <Button variant="primary" onClick={() => setInviting(true)}>
      <PlusIcon width={16} height={16} /> Invite
    </Button>
  );
  return (
    <AppShell title="People" sidebar={<AppSidebar activePage="people" />} actions={inviteButton}>
      <Page>
        <PageHeader
          title="People"
          lead="Everyone who may sign in to this server. An invitation is a one-time link with which they choose a password. Disabling someone signs them out and stops their keys at once."
        />
        {problem && <FormError role="alert">{problem}</FormError>}
        {loading && !data && <Skeleton lines={3} label="Loading people" />}
        {error && !data && <ErrorState title="Could not load people" message={error.message} onRetry={() => void refetch()} />}
        {data && (
          <Table label="People">
            <thead>
              <tr>
                <th scope="col">Person</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.people.map((person) => (
                <tr key={person.id} data-testid="person-row" data-email={person.email}>
                  <td>
                    {person.name || person.email} {person.disabled && <Badge tone="danger">disabled</Badge>}
                    <span className={styles.sub}>{person.email}</span>
                  </td>
                  <td>{person.isAdmin ? <Badge tone="soft">administrator</Badge> : "member"}</td>
                  <td data-volatile>{formatRelative(person.createdAt)}</td>
                  <td className={styles.actions}>
                    {person.id !== me?.id && (
                      <span className={styles.buttons}>
                        <Button size="small" variant="ghost" onClick={() => void resetPassword(person)} aria-label={`Reset the password of ${person.email}`}>
                          Reset password
                        </Button>
                        <Button size="small" variant="ghost" onClick={() => void toggle(person)} aria-label={`${person.disabled ? "Enable" : "Disable"} ${person.email}`}>
                          {person.disabled ? "Enable" : "Disable"}
                        </Button>
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
        )}
      </Page>
      <InviteDialog open={inviting} onClose={() => setInviting(false)} />
      <Dialog open={link !== null} onClose={() => setLink(null)} title="Password reset" size="md" footer={<Button variant="primary" onClick={() => setLink(null)}>Done</Button>}>
        {link && <InvitationLink invitation={link} />}
      </Dialog>
    </AppShell>
  );
}
